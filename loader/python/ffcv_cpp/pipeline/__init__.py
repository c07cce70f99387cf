from .operation import Operation
from .pipeline_spec import PipelineSpec

__all__ = ["Operation", "PipelineSpec"]
