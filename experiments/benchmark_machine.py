"""Describes the machine a benchmark ran on, for the results it writes."""
import os
import platform


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "platform": platform.platform()}


def gpu_name():
    """The first GPU's name as nvidia-smi reports it, or None where there is none."""
    import subprocess
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30)
        if done.returncode == 0 and done.stdout.strip():
            name, driver = (done.stdout.strip().splitlines()[0].split(",") + [""])[:2]
            return "%s (driver %s)" % (name.strip(), driver.strip()) if driver else name.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return None
