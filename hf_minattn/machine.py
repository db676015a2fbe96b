"""What machine a measurement ran on, recorded beside every benchmark and experiment (timings mean little without
it): the CPU and its bf16 support, the cores and threads, the GPU if any, the library versions and the load."""

import datetime
import os
import platform
from pathlib import Path

import torch
import transformers


def machine_info() -> dict:
    cpu, flags = platform.processor(), ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and cpu in ("", "x86_64"):
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line
    except OSError:  # not Linux
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "avx512_bf16": "avx512_bf16" in flags,
        "amx_bf16": "amx_bf16" in flags,
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": os.getloadavg(),
    }


def machine_description(info: dict | None = None) -> str:
    """One line for a report: "[GPU name, ]cores x CPU (bf16 support), torch X, transformers Y"."""
    info = info or machine_info()
    bf16 = "native bf16" if info["avx512_bf16"] or info["amx_bf16"] else "no native bf16"
    where = f"GPU {info['gpu']}, " if info["gpu"] else ""
    return f"{where}{info['cores']} x {info['cpu']} ({bf16}), torch {info['torch']}, transformers {info['transformers']}"


def fast_bf16_available() -> bool:
    """Whether bf16 autocast speeds training up here: on a GPU with native bf16 (Ampere or later), or on a CPU with
    native bf16 matrix instructions (AVX512-BF16 or AMX), where matrix products run about 2-4 times faster than in
    fp32, by size. Without them torch emulates bf16 and matrix products get hundreds of times slower, so the default
    is then fp32."""
    if torch.cuda.is_available():
        # including_emulation defaults to True, which says yes on pre-Ampere GPUs (T4, V100) where bf16 is emulated
        # and slower than fp32.
        return torch.cuda.is_bf16_supported(including_emulation=False)
    # torch.cpu exposes the CPU feature checks only as private functions; default to fp32 if they move.
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def accelerator_available() -> bool:
    """A GPU (CUDA, MPS, XPU...) that torch can use."""
    if hasattr(torch, "accelerator"):  # torch >= 2.6: CUDA, MPS, XPU, ...
        return torch.accelerator.is_available()
    return torch.cuda.is_available() or torch.backends.mps.is_available()
