"""Measures the delimiter and encoding detectors on the correctness corpus (tests/corpus/): the
standard library's csv.Sniffer (what dsstar uses) against clevercsv, and dsstar's encoding rule
(UTF-8 check, then cp1252 only when bytes 0x80-0x9F occur, else latin-1) against
charset-normalizer. A detector is right on a file when the text it decodes equals the file's true
text, or when the delimiter it finds is the true one. Not a *_bench.py: clevercsv is not a
dependency, so `pip install clevercsv` first. Prints the figures quoted in the README."""

from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "corpus"

from dsstar_cli.analyzer.encoding import Utf8Check, choose  # noqa: E402

TRUE_ENCODING = {"latin1.csv": "latin-1", "cp1252.csv": "cp1252"}   # every other corpus file is UTF-8
TRUE_DELIMITER = {".tsv": "\t", ".psv": "|"}


def true_delimiter(path: Path) -> str:
    if path.suffix in TRUE_DELIMITER:
        return TRUE_DELIMITER[path.suffix]
    return ";" if path.name.startswith("semicolon") and path.parent == CORPUS / "files" else ","


def ours_delimiter(text: str) -> str:
    try:
        return csv.Sniffer().sniff(text, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def clever_delimiter(text: str) -> str:
    import clevercsv

    dialect = clevercsv.Detector().detect(text, delimiters=[",", ";", "\t", "|"])
    return dialect.delimiter if dialect else ","


def ours_encoding(data: bytes) -> str:
    check = Utf8Check()
    check.feed(data, final=True)
    return choose(data, check, True)[0] or "utf-8"


def normalizer_encoding(data: bytes) -> str:
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    return best.encoding if best else "utf-8"


def score(files: list[Path], detect, truth) -> tuple[int, float, list[str]]:
    right, wrong, start = 0, [], time.perf_counter()
    for path in files:
        if detect(path) == truth(path):
            right += 1
        else:
            wrong.append(path.name)
    return right, (time.perf_counter() - start) * 1000 / len(files), wrong


def real_files() -> list[Path]:
    """The delimited files of the benchmark folders in ../shared, when present: all ','-separated;
    their true text is UTF-8 where they decode as such, else Windows-1252 (FTC exports)."""
    shared = ROOT.parent / "shared" / "benchmarks"
    found = sorted(shared.glob("kramabench/*/input/**/*.csv")) + sorted(shared.glob("dabstep/data/*.csv"))
    for path in found:
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            TRUE_ENCODING[path.name] = "cp1252"
    return found


def main() -> None:
    entries = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    files = sorted({CORPUS / "files" / e["file"] for e in entries
                    if e["file"].endswith((".csv", ".tsv", ".psv"))})
    measure(files, "delimited files in the corpus")
    real = real_files()
    if real:
        measure(real, "delimited files in ../shared's benchmark folders")


def measure(files: list[Path], what: str) -> None:
    text = {p: p.read_bytes().decode(TRUE_ENCODING.get(p.name, "utf-8")) for p in files}
    raw = {p: p.read_bytes() for p in files}
    decoded = lambda p, enc: raw[p].decode(enc, errors="replace").lstrip("\ufeff")  # noqa: E731
    truth_text = lambda p: text[p].lstrip("\ufeff")  # noqa: E731
    rows = [
        ("delimiter: csv.Sniffer", score(files, lambda p: ours_delimiter(text[p]), true_delimiter)),
        ("delimiter: clevercsv", score(files, lambda p: clever_delimiter(text[p]), true_delimiter)),
        ("encoding: dsstar rule", score(files, lambda p: decoded(p, ours_encoding(raw[p])), truth_text)),
        ("encoding: charset-normalizer", score(files, lambda p: decoded(p, normalizer_encoding(raw[p])), truth_text)),
    ]
    print(f"{len(files)} {what}")
    for name, (right, ms, wrong) in rows:
        print(f"  {name:32s} {right}/{len(files)} right, {ms:.1f} ms/file; wrong: {', '.join(wrong[:6]) or '-'}"
              + (f" and {len(wrong) - 6} more" if len(wrong) > 6 else ""))


if __name__ == "__main__":
    main()
