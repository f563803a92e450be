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

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.lcc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["lcc-opt", "lcc", "lcc-run", "FileCheck", "not", "count"], tool_dirs)
