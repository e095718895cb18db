"""launchdraw.cu's loop (built as launchdraw.so) called from a Python process that holds CuPy's context on GPU 0 and,
with `--linkscope`, has linkscope's bench imported and one CuPy NCCL communicator made and destroyed first (the process
bench nccl runs in). Same arguments as the program. 1 x H200, 2026-11-29, issue 36.
    python3 py_draw.py [--linkscope] ACTION GENERATIONS CALL ALLOC"""
import ctypes
import sys

import cupy

args = sys.argv[1:]
if args and args[0] == "--linkscope":
    args = args[1:]
    import linkscope.cli  # noqa: F401  (the modules bench nccl has loaded)
    from cupy.cuda import nccl
    comm = nccl.NcclCommunicator.initAll([0])[0]
    comm.destroy()
cupy.cuda.Device(0).use()
cupy.zeros(1)
lib = ctypes.CDLL("/tmp/launchdraw.so")
argv = (ctypes.c_char_p * (len(args) + 1))(b"launchdraw", *[a.encode() for a in args])
sys.exit(lib.draw_main(len(args) + 1, argv))
