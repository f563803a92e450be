# lit configuration: which files are tests and which tools they may call.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "lcc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".lcc", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lcc_obj_root, "test", "lit")
config.substitutions.append(("%examples", os.path.join(config.lcc_src_root, "examples")))
config.substitutions.append(
    ("%corpus", os.path.join(config.lcc_src_root, "data", "kjv-genesis-exodus.txt")))

# ./dev.sh sanitize: what the sanitizers' runtime cannot do is UNSUPPORTED there.
if config.lcc_sanitizers.upper() in ("ON", "TRUE", "1", "YES"):
    config.available_features.add("sanitizers")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.lcc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["lcc-opt", "lcc", "lcc-run", "FileCheck", "not", "count"], tool_dirs)

# The CUDA target's compile-only checks need the toolkit's ptxas and
# libdevice (not a GPU); the same search order as compiler/cuda/CudaBinary.cpp.
def _cuda_toolkit():
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    for root in filter(None, roots):
        if os.access(os.path.join(root, "bin", "ptxas"), os.X_OK) and os.path.exists(
                os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc")):
            return root
    return None

if _cuda_toolkit():
    config.available_features.add("cuda-toolkit")
    llvm_config.with_environment("CUDA_HOME", _cuda_toolkit())

# Storage-fault tests mount a small tmpfs (a full disk, a read-only one) in a
# private mount namespace: root, or a user namespace, is needed.
import subprocess
import tempfile
with tempfile.TemporaryDirectory() as _d:
    try:
        if subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs " + _d],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            config.available_features.add("tmpfs-mount")
    except OSError:  # no unshare: the tests that need it are UNSUPPORTED
        pass
