"""ONNX Runtime with the CUDA execution provider loaded as a plugin EP (the ORT core on the GPU
machine is a CPU build; see ../shared/gpu/README.md): shared by model_bench.py and baseline.py."""
import os

import onnxruntime as ort

EP_LIB = os.environ.get("VINFER_ORT_CUDA_EP", "/opt/vinfer-gpu/libonnxruntime_providers_cuda.so")
_registered = False


def cuda_session(model, device=0, options=None):
    """Returns an InferenceSession of model on CUDA device `device` through the plugin EP."""
    global _registered
    if not _registered:
        ort.register_execution_provider_library("cuda", EP_LIB)
        _registered = True
    devs = [d for d in ort.get_ep_devices() if d.ep_name == "CUDAExecutionProvider"]
    if len(devs) <= device:
        raise RuntimeError(f"no CUDAExecutionProvider device {device} (have {len(devs)})")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_provider_for_devices([devs[device]], options or {})
    return ort.InferenceSession(model, sess_options=so)
