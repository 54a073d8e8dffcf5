"""Runs a wasm32-wasip1 program under wasmtime (the `wasmtime` Python package).

    python3 xtask/wasm_run.py PROGRAM.wasm [--dir HOST::GUEST]... [--env K=V]... -- ARGS...

Each `--dir` preopens a host directory at a guest path (WASI has no other
file access); stdout and stderr are the program's; the exit status is the
program's `proc_exit` code. Compiled modules are cached by wasmtime
(`Config.cache`), so running one program many times compiles it once.
"""

import argparse
import sys

try:
    import wasmtime
except ImportError:
    sys.stderr.write("wasm_run.py: the wasmtime Python package is missing; install it with `pip install wasmtime`\n")
    sys.exit(3)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("program")
    parser.add_argument("--dir", action="append", default=[], metavar="HOST::GUEST")
    parser.add_argument("--env", action="append", default=[], metavar="K=V")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    opts = parser.parse_args(argv[:split])
    args = argv[split + 1 :]

    config = wasmtime.Config()
    config.cache = True
    engine = wasmtime.Engine(config)
    module = wasmtime.Module.from_file(engine, opts.program)
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    store = wasmtime.Store(engine)
    wasi = wasmtime.WasiConfig()
    wasi.argv = [opts.program] + args
    wasi.env = [tuple(kv.split("=", 1)) for kv in opts.env]
    wasi.inherit_stdout()
    wasi.inherit_stderr()
    for spec in opts.dir:
        host, sep, guest = spec.partition("::")
        if not sep:
            parser.error(f"--dir {spec}: expected HOST::GUEST")
        wasi.preopen_dir(host, guest)
    store.set_wasi(wasi)
    instance = linker.instantiate(store, module)
    try:
        instance.exports(store)["_start"](store)
    except wasmtime.ExitTrap as exit:
        return exit.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
