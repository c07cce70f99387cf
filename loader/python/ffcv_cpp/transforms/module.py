from ..pipeline.operation import BatchStep


class ModuleWrapper(BatchStep):
    """Runs ``module`` (a torch.nn.Module, or any callable) on whole batches."""

    def __init__(self, module) -> None:
        self.module = module

    def apply(self, batch):
        return self.module(batch)
