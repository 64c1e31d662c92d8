#!/usr/bin/env python3
"""Compiles, without linking, the translation units of a CMake build whose compile command names a
folder (tests/oldest_build: LibTorch's headers), straight from compile_commands.json.

The build system cannot be asked for this: its object files wait on their targets' dependencies
(a test's on dl-train being linked), and nothing links against a headers-only LibTorch. Each
command runs as CMake wrote it, in parallel, but for its optimization level (-O0) and through the
build's ccache (DL_CCACHE in its CMakeCache.txt) where it found one: compile_commands.json leaves
CMake's compiler launcher out, and without it a warm run compiled every file again (430 s of a
451 s run on 2 cores, 2026-12-07). What this check proves is the front end's (the language and the
libraries' interfaces): code generation is the Debian 12 build's, and the image, which builds
without CI=true, does not make the optimizer's warnings errors. -O0 takes about 13% off a LibTorch
file's compile time (bench/NOTES.md: the headers' parsing is most of it) and keeps it cacheable;
-fsyntax-only would not be, and saved little more (bench/NOTES.md).

    compile_only.py BUILD_DIR FOLDER [JOBS]

Prints one line per compile (a unity batch, DL_UNITY_LIBTORCH, is one) and, for each that fails,
the first lines of the compiler's output, then how many compiles and source files; exit status 0
when every one compiled, 1 when any failed, 2 when none names FOLDER.
"""
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys


def ccache_of(build):
    """The ccache the build found (CMakeLists.txt's DL_CCACHE, its compiler launcher), or None."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("DL_CCACHE:"):
                    path = line.split("=", 1)[1].strip()
                    return path if path and not path.endswith("-NOTFOUND") else None
    except OSError:
        pass
    return None


def sources_of(entry):
    """The source files a compile command covers: a unity build's batch (CMake's unity_N_cxx.cxx,
    DL_UNITY_LIBTORCH) includes several by absolute path; any other file is its own."""
    name = os.path.basename(entry["file"])
    if not (name.startswith("unity_") and name.endswith(".cxx")):
        return [entry["file"]]
    with open(entry["file"]) as f:
        return [line.split('"')[1] for line in f if line.startswith('#include "')]


def main():
    build, folder = sys.argv[1], sys.argv[2]
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count() or 1
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = [e for e in json.load(f) if folder in e["command"]]
    if not entries:
        print(f"compile_only: no command in {build}/compile_commands.json names {folder}")
        return 2

    launcher = ccache_of(build)

    def compile_one(entry):
        words = [w for w in shlex.split(entry["command"]) if not w.startswith("-O")]
        words.insert(1, "-O0")
        # compile_commands.json leaves the dependency flags out too; ccache's depend mode (set
        # by oldest_build.sh) needs them, and skips the preprocessor on a miss with them.
        words.append("-MD")
        if launcher and not words[0].endswith("ccache"):
            words.insert(0, launcher)
        output = os.path.join(entry["directory"], words[words.index("-o") + 1])
        os.makedirs(os.path.dirname(output), exist_ok=True)
        r = subprocess.run(words, cwd=entry["directory"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        return entry["file"], r.returncode, r.stdout

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for n, (source, rc, out) in enumerate(pool.map(compile_one, entries), 1):
            print(f"[{n}/{len(entries)}] {'FAILED' if rc else 'compiled'} {source}", flush=True)
            if rc:
                failed += 1
                print("\n".join(out.splitlines()[:40]), flush=True)
            elif out.strip():  # warnings are errors in this build; anything else is worth seeing
                print(out, flush=True)
    sources = sum(len(sources_of(e)) for e in entries)
    print(f"compile_only: {len(entries) - failed} of {len(entries)} compiled, {sources} source files")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
