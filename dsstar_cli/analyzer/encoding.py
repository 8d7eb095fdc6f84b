"""Which text encoding a delimited file is in, said the way pandas needs it.

UTF-8 is claimed only when the bytes checked decode as UTF-8 (the whole file when it is read
whole to count rows; else its head and blocks spread through it to its tail), a BOM only when
there is one. Otherwise the file is single-byte: cp1252 when it uses the bytes 0x80-0x9F (curly
quotes, the euro sign), which latin-1 leaves as control characters, and none of the five that
cp1252 leaves undefined anywhere in the bytes checked (pandas would stop at one); latin-1 when it
does not (both decode every other byte alike). Measured against charset-normalizer on the
correctness corpus: see the README."""

from __future__ import annotations

import codecs

BOM = codecs.BOM_UTF8
NOT_C1 = bytes(b for b in range(256) if not 0x80 <= b <= 0x9F)  # deleted, to find the bytes 0x80-0x9F fast
CP1252_UNDEFINED = b"\x81\x8d\x8f\x90\x9d"
NOT_UNDEFINED = bytes(b for b in range(256) if b not in CP1252_UNDEFINED)


class Utf8Check:
    """Feeds blocks of a file through an incremental UTF-8 decoder; `ok` stays True while every
    block decodes. Blocks read from the middle of a file may start inside a character, so each
    is checked from its first character boundary when `restart` is set."""

    def __init__(self) -> None:
        self.ok = True
        self.cp1252_bytes = False      # Bytes 0x80-0x9F seen since the bytes stopped being UTF-8,
        self.cp1252_undefined = False  # and among them one that cp1252 cannot decode.
        self._decoder = codecs.getincrementaldecoder("utf-8")()

    def feed(self, block: bytes, restart: bool = False, final: bool = False) -> None:
        if self.ok:
            if restart:
                self._decoder.reset()
                cut = 0
                while cut < min(4, len(block)) and 0x80 <= block[cut] <= 0xBF:  # continuation bytes
                    cut += 1
                block = block[cut:]
            try:
                self._decoder.decode(block, final=final)
                return
            except UnicodeDecodeError:
                self.ok = False
        # Not UTF-8 (in UTF-8 the bytes 0x80-0x9F are parts of characters, so only now do they count).
        # Every block from here on is scanned: one undefined byte late in the file rules cp1252 out.
        if not self.cp1252_bytes and block.translate(None, NOT_C1):
            self.cp1252_bytes = True
        if self.cp1252_bytes and not self.cp1252_undefined and block.translate(None, NOT_UNDEFINED):
            self.cp1252_undefined = True


def choose(head: bytes, check: Utf8Check, whole: bool) -> tuple[str | None, str]:
    """(the `encoding=` pandas needs, or None for its UTF-8 default; what to call it)."""
    if check.ok:
        bom = " with BOM" if head.startswith(BOM) else ""
        return None, f"utf-8{bom}" if whole else f"utf-8{bom} (in the parts read)"
    if check.cp1252_bytes and not check.cp1252_undefined:
        try:
            head.decode("cp1252")
            return "cp1252", "cp1252"
        except UnicodeDecodeError:
            pass
    return "latin-1", "latin-1"


MEMBER_BYTES = 1024 * 1024  # A file up to this size is checked whole; a larger one by its head and tail.


def of_file(path) -> str | None:
    """The `encoding=` pandas needs for one file (None for UTF-8): a dataset's members each get
    theirs (one cp1252 member among UTF-8 ones broke the shared loader). Reads at most
    1.25 x MEMBER_BYTES."""
    check = Utf8Check()
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(0)
        head = handle.read(MEMBER_BYTES)
        check.feed(head, final=size <= MEMBER_BYTES)
        if size > MEMBER_BYTES:
            handle.seek(max(size - MEMBER_BYTES // 4, MEMBER_BYTES))
            check.feed(handle.read(), restart=True, final=True)
    return choose(head, check, size <= MEMBER_BYTES)[0]
