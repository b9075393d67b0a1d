#!/usr/bin/env python3
"""Checks that no comment in the C sources names a function that does not exist.

    python3 tests/comment_names.py [SOURCE_DIR]

Reads the comments of every .c, .h, .cu, .cuh and .cc file under sim/, trainer/, results/
and tests/, and prints FILE:LINE: NAME for each name a comment refers to that is nowhere in
the tree; exits 1 when there is one, 0 when there is none, 2 on bad input. The ctest
`comment_names` runs it.

What counts as a reference to a name (a token is [A-Za-z_][A-Za-z0-9_]*):
  1. a token followed at once by `(`, as in `sim_run(` or `sim_run()`, when it holds an
     underscore: dtsim's functions are all module_object_verb, and a one-word token before
     a parenthesis is mathematics in these comments (softmax(z), Gamma(shape, 1));
  2. a token with a project prefix (PROJECT_PREFIXES below, upper or lower case), with or
     without backquotes or parentheses: `pipe_schedule_of`, SIM_TAKES_*, dt_status;
  3. a token after `->`, as in be->gemm: a member of one of the tree's structures;
  4. a token with an underscore that opens a comment and is followed by `:` or by a
     parenthesis and `:`, the form of a note on a function or constant
     (/* zero_prefetch: stage s's jobs ... */, /* dtsim_pid_alive(pid): 0 when ... */);
  5. a lower-case token with an underscore alone in parentheses, the way these comments
     cite the function that does what they describe: "(pipe_schedule)", "(iv_bytes)".
A token is left alone when it follows `.`, `::` or `/` (a key such as strategy.dp_comm, a
Python or C++ name such as torch.optim.AdamW or simgrid::s4u, a path) or when `.` and a
letter follow it (a file name: cli_sweep.h, tensor_gpt.py).
A `*` inside or at the end of a reference is a wildcard, and so is an upper-case part of a
lower-case name (a placeholder): SIM_TAKES_*, trainer_model_*_group and sim_strategy_NAME
stand for every name they match, and at least one must exist.

A name exists when the tree holds it:
  - as a token of C code (outside comments and strings) in any C or CUDA file of the
    repository: the functions, macros, types, members and enum values it defines, and every
    library function it calls (libc, SimGrid, OpenBLAS, CUDA, SQLite, Check, inih, zlib,
    MPI);
  - as a token inside a C string literal: an SQL function the code registers
    ("dtsim_pid_alive"), a scenario key ("tensor_members"), a gnuplot variable;
  - as a function or class a Python file of the repository defines (def NAME, class NAME);
  - or it is another project's: it starts with one of EXTERNAL_PREFIXES below (the
    libraries' functions dtsim does not call), or it is in EXTERNAL below (TF Privacy's and
    Hugging Face's Python, Linux's TCP), each with where it comes from.
libc's one-word names (malloc, memset, printf) are no references (rule 1 wants an
underscore), and a Python name after its module (torch.optim.AdamW) is left alone.
"""
import os
import re
import sys

# Module prefixes of dtsim's own names (STYLE.md: module_object_verb): a token that starts
# with one of these and an underscore is a reference even without a parenthesis.
PROJECT_PREFIXES = (
    "sim", "pipe", "trainer", "dt", "scenario", "results", "cli", "query", "fig", "gp",
    "sweep", "tg", "plan", "stage",
)

# Library prefixes: a name that starts with one of these is a library's, left alone when
# the tree does not use it.
EXTERNAL_PREFIXES = (
    "sg_", "xbt_", "simgrid_", "s4u_",            # SimGrid
    "cblas_", "openblas_",                        # OpenBLAS
    "cuda", "cublas",                             # CUDA runtime, cuBLAS
    "sqlite3_",                                   # SQLite
    "ck_", "tcase_", "srunner_", "suite_",        # Check
    "ini_",                                       # inih
    "gz", "inflate", "deflate",                   # zlib
    "MPI_",                                       # MPI
    "MHD_", "cJSON_",                             # libmicrohttpd, cJSON
    "pthread_", "posix_", "clock_", "__builtin_",  # libc, POSIX, the compiler's builtins
)

# Names from other code that the comments cite as references (rules 1-4) without the tree
# using them. A name of other code cited bare (tcp_cwnd_restart, clip_grad_norm_) is no
# reference and needs no entry.
EXTERNAL = {
    "compute_rdp",             # TF Privacy (the privacy suite's test values)
    "compute_dp_sgd_privacy",  # TF Privacy
    "num_parameters",          # Hugging Face transformers (the profile suite's counts)
    # Linux's TCP, net/ipv4/ (the tcp network model follows it)
    "tcp_cwnd_restart", "tcp_rtt_estimator", "bbr_high_gain", "bbr_init_pacing_rate_from_rtt",
    "bbr_set_cwnd",
}

SCANNED = ("sim", "trainer", "results", "tests")
C_SUFFIXES = (".c", ".h", ".cu", ".cuh", ".cc")
SKIPPED_DIRS = {".git", "build"}

TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# a token, wildcards inside or after it (SIM_TAKES_*, trainer_model_*_group)
REFERENCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\*[A-Za-z0-9_]*)*")
# rule 4: a name that opens a comment, then `:` or `(...):`
NOTE = re.compile(r"\s*\**\s*([A-Za-z_][A-Za-z0-9_]*_[A-Za-z0-9_]*)(?:\([^()]*\))?:(?:\s|\Z)")
PY_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def split_c(text):
    """The code of a C file with comments and strings blanked, the tokens of its string
    literals, and its comments as (line, text, first) triples, a block comment a triple per
    line, first true on the line that opens the comment."""
    code = []
    strings = []
    comments = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            comments.append((line, text[i + 2:j], True))
            code.append(" ")
            i = j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                comments.append((line + k, part, k == 0))
            newlines = text.count("\n", i, j)
            line += newlines
            code.append(" " + "\n" * newlines)
            i = j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            strings.append(text[i + 1:j])
            code.append(" ")
            i = j + 1
        else:
            if c == "\n":
                line += 1
            code.append(c)
            i += 1
    return "".join(code), strings, comments


def walk(root, top, suffixes):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIPPED_DIRS and not d.startswith("build"))
        for name in sorted(filenames):
            if name.endswith(suffixes):
                yield os.path.join(dirpath, name)


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def known_names(root):
    names = set()
    for path in walk(root, "", C_SUFFIXES):
        code, strings, _ = split_c(read(path))
        names.update(TOKEN.findall(code))
        for s in strings:
            names.update(TOKEN.findall(s))
    for path in walk(root, "", (".py",)):
        names.update(PY_DEF.findall(read(path)))
    return names


def references(comment, first):
    """(name, col) of each reference in one line of a comment (the rules above)."""
    prefixes = tuple(p + "_" for p in PROJECT_PREFIXES) + \
        tuple(p.upper() + "_" for p in PROJECT_PREFIXES)
    note = NOTE.match(comment) if first else None
    for m in REFERENCE.finditer(comment):
        name, start, end = m.group(0), m.start(), m.end()
        before = comment[max(0, start - 2):start]
        after = comment[end:end + 2]
        if before.endswith((".", "::", "/")):
            continue
        if len(after) == 2 and after[0] == "." and after[1].isalpha():
            continue
        called = after.startswith("(") and "_" in name.strip("_*")
        prefixed = name.startswith(prefixes)
        member = before == "->"
        noted = note is not None and start == note.start(1)
        cited = (comment[start - 1:start] == "(" and after.startswith(")") and "_" in name
                 and name == name.lower())
        if called or prefixed or member or noted or cited:
            yield name, start


def exists(name, names):
    if name in names or name in EXTERNAL or name.startswith(EXTERNAL_PREFIXES):
        return True
    parts = name.split("_")
    if any(c.islower() for c in name):
        # an upper-case part of a lower-case name is a placeholder: sim_strategy_NAME
        parts = ["*" if re.fullmatch(r"[A-Z][A-Z0-9]*", p) else p for p in parts]
    pattern = "_".join(parts)
    if "*" not in pattern:
        return False
    pattern = re.compile(re.escape(pattern).replace(r"\*", "[A-Za-z0-9_]*") + r"\Z")
    return any(pattern.match(n) for n in names)


def main(argv):
    if len(argv) > 2:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, "sim")):
        print(f"comment_names: {root} is not dtsim's source folder", file=sys.stderr)
        return 2
    names = known_names(root)
    checked = 0
    files = 0
    unknown = []
    for top in SCANNED:
        for path in walk(root, top, C_SUFFIXES):
            files += 1
            rel = os.path.relpath(path, root)
            for line, text, first in split_c(read(path))[2]:
                for name, _ in references(text, first):
                    checked += 1
                    if not exists(name, names):
                        unknown.append(f"{rel}:{line}: {name}")
    for u in unknown:
        print(f"{u}: named in a comment, defined nowhere in the tree")
    print(f"comment_names: {checked} references in the comments of {files} files, "
          f"{len(unknown)} to names the tree does not hold")
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
