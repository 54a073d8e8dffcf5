"""Drives the mlp C library from Python through ctypes, standard library only.

python3 mlp.py LIBMLP.so mlp.h IN.f32 OUT.f32 COUNT: reads COUNT samples of
raw f32 input, runs each and writes the outputs; the element counts come
from the header's macros. Exits non-zero when a call fails.
"""

import ctypes
import re
import sys


def header_macro(header, name):
    match = re.search(r"^#define %s (\d+)$" % re.escape(name), header, re.MULTILINE)
    if match is None:
        sys.exit("mlp.h defines no %s" % name)
    return int(match.group(1))


def main(so_path, header_path, in_path, out_path, count):
    with open(header_path) as f:
        header = f.read()
    n_in = header_macro(header, "MLP_INPUT_X_ELEMENTS")
    n_out = header_macro(header, "MLP_OUTPUT_PROBS_ELEMENTS")
    lib = ctypes.CDLL(so_path)
    handle = ctypes.c_void_p
    floats = ctypes.POINTER(ctypes.c_float)
    lib.mlp_error_message.argtypes, lib.mlp_error_message.restype = [ctypes.c_int], ctypes.c_char_p
    lib.mlp_create.argtypes, lib.mlp_create.restype = [ctypes.POINTER(handle)], ctypes.c_int
    lib.mlp_destroy.argtypes, lib.mlp_destroy.restype = [handle], None
    lib.mlp_run.argtypes, lib.mlp_run.restype = [handle], ctypes.c_int
    lib.mlp_set_input_x.argtypes = [handle, floats, ctypes.c_size_t]
    lib.mlp_set_input_x.restype = ctypes.c_int
    lib.mlp_get_output_probs.argtypes = [handle, floats, ctypes.c_size_t]
    lib.mlp_get_output_probs.restype = ctypes.c_int

    def check(status, what):
        if status != 0:
            sys.exit("%s: %s" % (what, lib.mlp_error_message(status).decode()))

    if lib.mlp_run(None) != header_macro_status(header, "MLP_ERROR_NULL_POINTER"):
        sys.exit("mlp_run(NULL) is not MLP_ERROR_NULL_POINTER")
    model = handle()
    check(lib.mlp_create(ctypes.byref(model)), "mlp_create")
    x = (ctypes.c_float * n_in)()
    y = (ctypes.c_float * n_out)()
    with open(in_path, "rb") as src, open(out_path, "wb") as dst:
        for _ in range(count):
            data = src.read(ctypes.sizeof(x))
            if len(data) != ctypes.sizeof(x):
                sys.exit("%s holds fewer than %d samples" % (in_path, count))
            ctypes.memmove(x, data, len(data))
            check(lib.mlp_set_input_x(model, x, n_in), "mlp_set_input_x")
            check(lib.mlp_run(model), "mlp_run")
            check(lib.mlp_get_output_probs(model, y, n_out), "mlp_get_output_probs")
            dst.write(bytes(y))
    lib.mlp_destroy(model)


def header_macro_status(header, name):
    match = re.search(r"^    %s = (\d+),$" % re.escape(name), header, re.MULTILINE)
    if match is None:
        sys.exit("mlp.h has no status %s" % name)
    return int(match.group(1))


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit("usage: mlp.py LIBMLP.so mlp.h IN.f32 OUT.f32 COUNT")
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
