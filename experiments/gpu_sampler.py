"""GPU utilisation and memory while a command runs, sampled by nvidia-smi in the background.

    with GpuSampler() as gpu:
        subprocess.run(...)
    gpu.mean_utilisation, gpu.peak_memory_mib   # None where nvidia-smi is missing

Utilisation is nvidia-smi's `utilization.gpu`: the share of each sample period in which a kernel
ran, so a GPU kept busy by small kernels reads 100% too; the mean is over the whole command,
its start and end included.
"""
import shutil
import subprocess
import tempfile


class GpuSampler:
    def __init__(self, period_ms=200):
        self.period_ms = period_ms
        self.samples = []  # (utilisation %, memory used MiB)
        self._process = None
        self._file = None

    def __enter__(self):
        if shutil.which("nvidia-smi") is None:
            return self
        self._file = tempfile.TemporaryFile(mode="w+")
        self._process = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
             "--format=csv,noheader,nounits", "-lms", str(self.period_ms)],
            stdout=self._file, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        if self._process is None:
            return False
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._file.seek(0)
        for line in self._file:
            fields = [f.strip() for f in line.split(",")]
            try:
                self.samples.append((float(fields[0]), float(fields[1])))
            except (ValueError, IndexError):
                continue  # a line cut off by the termination, or "[N/A]"
        self._file.close()
        return False

    @property
    def mean_utilisation(self):
        if not self.samples:
            return None
        return sum(s[0] for s in self.samples) / len(self.samples)

    @property
    def peak_memory_mib(self):
        return max((s[1] for s in self.samples), default=None)
