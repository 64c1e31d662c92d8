#!/usr/bin/env python3
"""Every reader of outside bytes has a harness, or a stated reason why it needs none.

Finds the source files (core/, launcher/, trainer/, python/) that read bytes from a file, a pipe,
a socket or a server, by the calls they make, and checks them against docs/fuzzing.md's table
"Every reader of outside bytes"; checks every harness tests/fuzz/<name>_fuzz.cpp against the
harness table there, tests/fuzz/CMakeLists.txt, tests/fuzz/fuzz_run.sh and tests/fuzz/corpus/.
Prints one line per gap and exits 1 when there is one, 0 otherwise.

    tests/static/fuzz_coverage_check.py [REPO]
    tests/static/fuzz_coverage_check.py --self-test [REPO]   (shows each kind of gap is caught)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The calls through which outside bytes come in. A file that makes one reads outside bytes.
# read( counts in POSIX's form, a descriptor then a comma: not a method or a lambda of that name.
READ_CALLS = re.compile(
    r"std::ifstream|std::istreambuf_iterator|(?<![\w.>])pread\(|(?<![\w.>])(?:::)?read\(\s*[\w\[\]]+\s*,|"
    r"fread\(|(?<![\w.>])mmap\(|(?<![\w.>])recv\(|read_whole_file\(|read_data_file\(|"
    r"read_file_into\(|read_fully_at\(|getline\(|curl_easy_perform")
SOURCE_DIRS = ("core", "launcher", "trainer", "python")


def sources(repo):
    for top in SOURCE_DIRS:
        for folder, _, files in os.walk(os.path.join(repo, top)):
            for name in files:
                if name.endswith(".cpp"):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, repo), path


def readers(repo):
    found = {}
    for rel, path in sources(repo):
        with open(path, encoding="utf-8", errors="replace") as f:
            # Comments say "read" too: only code counts.
            code = re.sub(r"//[^\n]*", "", f.read())
        calls = sorted(set(READ_CALLS.findall(code)))
        if calls:
            found[rel] = calls
    return found


def table_rows(doc, heading):
    """The rows of the first table after `heading`, as lists of cells without backquotes."""
    lines = doc.split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == heading)
    except StopIteration:
        return None
    rows, inside = [], False
    for line in lines[start + 1:]:
        if line.startswith("|"):
            inside = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue
            rows.append(cells)
        elif inside:
            break
        elif line.startswith("## "):
            break
    return rows[1:]  # without the header row


def harness_names(cell):
    return set(re.findall(r"`(\w+)_fuzz`", cell))


def check(repo):
    gaps = []
    doc_path = os.path.join(repo, "docs", "fuzzing.md")
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    fuzz_dir = os.path.join(repo, "tests", "fuzz")
    harnesses = sorted(n[:-len("_fuzz.cpp")] for n in os.listdir(fuzz_dir) if n.endswith("_fuzz.cpp"))

    harness_table = table_rows(doc, "# Fuzzing the readers")
    reader_table = table_rows(doc, "## Every reader of outside bytes")
    if reader_table is None:
        return ["docs/fuzzing.md: no section '## Every reader of outside bytes'"]
    documented = set()
    for row in harness_table or []:
        documented |= harness_names(row[0])
    with open(os.path.join(fuzz_dir, "CMakeLists.txt"), encoding="utf-8") as f:
        cmake = f.read()
    with open(os.path.join(fuzz_dir, "fuzz_run.sh"), encoding="utf-8") as f:
        run = f.read()
    listed = re.search(r"all_harnesses=\(([^)]*)\)", run)
    run_names = set(listed.group(1).split()) if listed else set()
    for h in harnesses:
        if h not in documented:
            gaps.append(f"tests/fuzz/{h}_fuzz.cpp: not in docs/fuzzing.md's harness table")
        if not re.search(rf"dl_fuzz_harness\({h}_fuzz\b", cmake):
            gaps.append(f"tests/fuzz/{h}_fuzz.cpp: not built by tests/fuzz/CMakeLists.txt (dl_fuzz_harness)")
        if h not in run_names:
            gaps.append(f"tests/fuzz/{h}_fuzz.cpp: not among tests/fuzz/fuzz_run.sh's all_harnesses")
        corpus = os.path.join(fuzz_dir, "corpus", h)
        if not os.path.isdir(corpus) or not os.listdir(corpus):
            gaps.append(f"tests/fuzz/{h}_fuzz.cpp: no seed in tests/fuzz/corpus/{h}/ (tests/fuzz/make_corpus.py)")
    for h in sorted(documented - set(harnesses)):
        gaps.append(f"docs/fuzzing.md: the harness table names {h}_fuzz, which tests/fuzz/ does not have")

    found = readers(repo)
    rows = {}
    for row in reader_table:
        name = row[0].strip("`")
        if len(row) < 3 or not row[2]:
            gaps.append(f"docs/fuzzing.md: the row of {name} says nothing in 'covered by'")
            continue
        rows[name] = row[2]
    for rel, calls in sorted(found.items()):
        if rel not in rows:
            gaps.append(f"{rel}: reads outside bytes ({', '.join(calls)}) but docs/fuzzing.md's "
                        "'Every reader of outside bytes' neither names a harness for it nor says "
                        "why it needs none")
    for name, covered in sorted(rows.items()):
        if not os.path.exists(os.path.join(repo, name)):
            gaps.append(f"docs/fuzzing.md: the reader table names {name}, which does not exist")
        elif name not in found:
            gaps.append(f"docs/fuzzing.md: the reader table names {name}, which reads nothing "
                        "from outside any more (remove the row)")
        names = harness_names(covered)
        if not names and not covered.startswith(("none needed", "its callers")):
            gaps.append(f"docs/fuzzing.md: {name}: 'covered by' names no harness and gives no "
                        "reason ('none needed: ...')")
        for h in sorted(names - set(harnesses)):
            gaps.append(f"docs/fuzzing.md: {name} is said to be covered by {h}_fuzz, which "
                        "tests/fuzz/ does not have")
    return gaps


def self_test(repo):
    """Each kind of gap, made in a copy of the files the check reads, must be caught."""
    failures = 0

    def copy():
        work = tempfile.mkdtemp()
        for top in SOURCE_DIRS + ("docs", "tests/fuzz"):
            src = os.path.join(repo, top)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(work, top), ignore=shutil.ignore_patterns("corpus"))
        # The corpus folders, empty but for one file each: the check only counts them.
        for h in os.listdir(os.path.join(repo, "tests", "fuzz", "corpus")):
            os.makedirs(os.path.join(work, "tests", "fuzz", "corpus", h))
            open(os.path.join(work, "tests", "fuzz", "corpus", h, "seed"), "w").close()
        return work

    def edit(path, old, new):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if old not in text:
            raise SystemExit(f"fuzz_coverage_check.py --self-test: '{old}' is not in {path} (stale)")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))

    def expect(name, mutate, want):
        nonlocal failures
        work = copy()
        try:
            mutate(work)
            gaps = check(work)
            if not any(want in g for g in gaps):
                print(f"self-test: {name}: expected a gap containing '{want}', got: {gaps}")
                failures += 1
            else:
                print(f"self-test: {name}: caught")
        finally:
            shutil.rmtree(work)

    work = copy()
    clean = check(work)
    shutil.rmtree(work)
    if clean:
        print(f"self-test: the unchanged copy has gaps: {clean}")
        failures += 1

    def new_reader(w):
        with open(os.path.join(w, "trainer", "data", "new_format.cpp"), "w") as f:
            f.write('#include <fstream>\nint n(const char* p) { std::ifstream in(p); return in.get(); }\n')

    def new_pread(w):
        with open(os.path.join(w, "core", "peek.cpp"), "w") as f:
            f.write("#include <unistd.h>\nlong peek(int fd, char* b) { return pread(fd, b, 8, 0); }\n")

    def harness_off_the_list(w):
        edit(os.path.join(w, "tests", "fuzz", "fuzz_run.sh"), " tar_listing ", " ")

    def harness_not_built(w):
        edit(os.path.join(w, "tests", "fuzz", "CMakeLists.txt"), "dl_fuzz_harness(hostlist_fuzz dl::launch)\n", "")

    def harness_undocumented(w):
        with open(os.path.join(w, "tests", "fuzz", "extra_fuzz.cpp"), "w") as f:
            f.write("// nothing\n")

    def row_without_reason(w):
        edit(os.path.join(w, "docs", "fuzzing.md"), "none needed: 31 bytes at most", "short")

    def row_names_missing_harness(w):
        edit(os.path.join(w, "docs", "fuzzing.md"), "| `hostlist_fuzz` |", "| `hostlists_fuzz` |")

    def reader_stops_reading(w):
        edit(os.path.join(w, "core", "run_lock.cpp"), "pread(", "preadx(")

    expect("a new file reading with std::ifstream", new_reader, "trainer/data/new_format.cpp: reads outside bytes")
    expect("a new file reading with pread", new_pread, "core/peek.cpp: reads outside bytes")
    expect("a harness left out of fuzz_run.sh", harness_off_the_list, "tar_listing_fuzz.cpp: not among")
    expect("a harness left out of CMakeLists.txt", harness_not_built, "hostlist_fuzz.cpp: not built")
    expect("a harness missing from the docs", harness_undocumented, "extra_fuzz.cpp: not in docs")
    expect("a row without a harness or a reason", row_without_reason, "core/run_lock.cpp: 'covered by' names no harness")
    expect("a harness renamed in the docs only", row_names_missing_harness, "names hostlists_fuzz")
    expect("a row for a file that no longer reads", reader_stops_reading, "core/run_lock.cpp, which reads nothing")
    return 1 if failures else 0


def main(argv):
    args = [a for a in argv if a != "--self-test"]
    repo = os.path.abspath(args[0]) if args else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if "--self-test" in argv:
        return self_test(repo)
    gaps = check(repo)
    for g in gaps:
        print(g)
    if gaps:
        print(f"fuzz_coverage_check.py: {len(gaps)} gap(s)")
        return 1
    print(f"fuzz_coverage_check.py: {len(readers(repo))} readers of outside bytes, each covered or "
          "explained; every harness built, run, seeded and documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
