"""Files: the data folder, links planted where dsstar writes next, links out of the data folder,
reads outside the allowlist, the run-folder cap, and what root could do to files and devices.

(The data folder being the home folder is tests/test_runfolder_safety.py's.)"""

from __future__ import annotations

import os
import pwd
import socket
import stat
from pathlib import Path

import pytest

from security.support import disk_usage, snapshot

READS_ANYTHING = "a script may read whatever the user can"

# -- the data folder (issue 12, item 10) ----------------------------------------------------------

DATA_ATTACKS = {
    "remove": "os.remove(f'{D}/sales.csv')",
    "overwrite": "open(f'{D}/sales.csv', 'w').write('region,units\\nnorth,99\\n')",
    "truncate": "os.truncate(f'{D}/sales.csv', 0)",
    "rename": "os.rename(f'{D}/sales.csv', f'{D}/moved.csv')",
    "chmod": "os.chmod(f'{D}/sales.csv', 0o600)",
    "utime": "os.utime(f'{D}/sales.csv', (0, 0))",
    "hardlink-then-write": "os.link(f'{D}/sales.csv', 'linked.csv'); open('linked.csv', 'a').write('x,1\\n')",
    "rmtree": "import shutil; shutil.rmtree(D)",
    "subprocess-rm": "import subprocess; subprocess.run(['rm', '-rf', D], check=True)",
    "new-file": "open(f'{D}/sub/new.txt', 'w').write('x')",
}


def test_data_folder_attacks(box):
    """strong, medium: each action fails inside the script and the data stays as it was;
    basic: the change is reported (box.run checks the data after each script)."""
    problems = []
    for attack, line in DATA_ATTACKS.items():
        try:
            result = box.run(f"import os\nD = {str(box.data)!r}\n{line}\nprint('done')", f"data-{attack}")
            assert not result.ok, f"the step succeeded: {result.stdout!r}"
            if box.confined:
                assert "done" not in result.stdout, f"the action did not raise: {result.stderr[-300:]!r}"
        except AssertionError as exc:
            problems.append(f"{attack}: {exc}")
    assert not problems, "\n".join(problems)


# -- links planted where dsstar writes next (item 1) -----------------------------------------------

PLANT = """
import os, sys
stem, folder = sys.argv[0][:-3], os.path.dirname(sys.argv[0])
places = [stem + ".stdout.txt.tmp", stem + ".stdout.txt", stem + ".stderr.txt",
          os.path.join(folder, NEXT + ".py"), os.path.join(folder, NEXT + ".stdout.txt"),
          os.path.join(folder, NEXT + ".stdout.txt.tmp"), "result.csv", NEXT + ".py", NEXT + ".stdout.txt"]
for place in places:
    try:
        os.symlink(TARGET, place)
        print("planted", os.path.abspath(place))
    except OSError as exc:
        print("refused", os.path.abspath(place), exc.strerror)
"""


def test_links_planted_where_dsstar_writes_next(box):
    """Links to a data file, the description cache and a new dsstar.yaml in the cwd, planted next
    to the script and in the work folder; dsstar then writes the next script and both outputs as
    the agent does (Executor.run, RunFolder.write): nothing reaches a target."""
    targets = [box.data / "sales.csv", box.outside.cache_canary, box.outside.cwd / "dsstar.yaml"]
    for number, target in enumerate(targets):
        first, second = f"hostile{2 * number + 1}", f"hostile{2 * number + 2}"
        before = snapshot(target.parent)
        code = f"TARGET, NEXT = {str(target)!r}, {second!r}\n{PLANT}"
        planted = box.run(code, first)
        followed = box.run("print('the next script')", second)
        for name, result in ((first, planted), (second, followed)):
            box.run_folder.write(f"scripts/{name}.stdout.txt", result.stdout)
            box.run_folder.write(f"scripts/{name}.stderr.txt", result.stderr)
        assert "planted" in planted.stdout or "refused" in planted.stdout, planted.stderr
        assert followed.ok and "the next script" in followed.stdout, followed.stderr
        assert snapshot(target.parent) == before, f"{target} was written through a planted link"
        if box.confined:  # Only the work folder takes a link; every place outside it refuses.
            escaped = [line for line in planted.stdout.splitlines()
                       if line.startswith("planted") and not line.split()[1].startswith(f"{box.work}/")]
            assert not escaped, escaped
        collected = [name for name in box.run_folder.artifacts() if (box.run_folder.path / name).is_symlink()]
        assert not collected, f"links collected as artifacts: {collected}"
    assert not (box.outside.cwd / "dsstar.yaml").exists()


# -- links out of the data folder (item 8) ---------------------------------------------------------

@pytest.mark.tiers("strong", "medium", reason=READS_ANYTHING)
def test_a_link_out_of_the_data_folder_is_not_followed(box):
    secret = box.outside.linked_file.read_text()
    result = box.run(f"import os\nprint(sorted(os.listdir({str(box.data)!r})))\n"
                     f"try:\n    print('read', open({str(box.data / 'users.csv')!r}).read()[::-1])\n"
                     f"except OSError as exc:\n    print('refused', type(exc).__name__)")
    assert "users.csv" in result.stdout, result.stderr  # Listed as a link...
    assert "refused" in result.stdout  # ...but not followed.
    assert secret[::-1] not in result.stdout and secret not in result.stdout


# -- reads outside the allowlist (the file promises of strong and medium) -------------------------

READS = """
import os
def attempt(what, action):
    try:
        found = action()
        print("READ", what, repr(found)[:200])
    except OSError as exc:
        print("refused", what, exc.strerror)
attempt("home .env", lambda: open(ENV_FILE).read())
attempt("the user's real home", lambda: os.listdir(REAL_HOME))
attempt("/etc/shadow", lambda: open("/etc/shadow").read())
attempt("/run", lambda: os.listdir("/run"))
attempt("/sys", lambda: os.listdir("/sys"))
attempt("the run folder's scripts", lambda: os.listdir(os.path.join(RUN_FOLDER, "scripts")))
attempt("the run folder's journal", lambda: open(os.path.join(RUN_FOLDER, "events.jsonl")).read())
attempt("a file of the host /tmp", lambda: open(HOST_TMP_FILE).read())
try:
    print("host /tmp visible:", os.path.basename(HOST_TMP_FILE) in os.listdir("/tmp"))
except OSError as exc:
    print("refused /tmp", exc.strerror)
seen = []
try:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if MARKER in open(f"/proc/{pid}/cmdline", "rb").read():
                    seen.append(pid)
            except OSError:
                pass
    print("host process visible:", bool(seen))
except OSError as exc:
    print("refused /proc", exc.strerror)
print("data readable:", open(os.path.join(DATA, "sales.csv")).read().startswith("region"))
open("written.txt", "w").write("ok")
print("work writable:", open("written.txt").read() == "ok")
"""


@pytest.mark.tiers("strong", "medium", reason=READS_ANYTHING)
def test_reads_stay_inside_the_allowlist(box, sleeper):
    real_home = pwd.getpwuid(os.getuid()).pw_dir  # HOME is the fake one here.
    host_file = Path(f"/tmp/dsstar-visible-{sleeper.marker}")
    host_file.write_text("host")
    try:
        code = (f"ENV_FILE, REAL_HOME, RUN_FOLDER = {str(box.outside.env_file)!r}, {real_home!r}, "
                f"{str(box.run_folder.path)!r}\nHOST_TMP_FILE, MARKER = {str(host_file)!r}, "
                f"{sleeper.marker.encode()!r}\nDATA = {str(box.data)!r}\n{READS}")
        result = box.run(code)
    finally:
        host_file.unlink()
    assert result.ok, result.stderr
    assert "READ" not in result.stdout, result.stdout
    assert "host /tmp visible: True" not in result.stdout and "host process visible: True" not in result.stdout
    assert "data readable: True" in result.stdout and "work writable: True" in result.stdout


# -- the run-folder cap (item 6) -------------------------------------------------------------------

@pytest.mark.executor(max_workdir_mb=8)
def test_the_run_folder_cap_counts_everything(box):
    """40 MB in 5 MB files, some named *.py, some dated 1970 (where utime is allowed), some in a
    sub-folder: the step fails and the work folder is back under its cap."""
    code = """
import os
os.makedirs("deep/er", exist_ok=True)
for i in range(8):
    name = ["blob{}.bin", "blob{}.py", "deep/er/blob{}.csv", "deep/old{}.py"][i % 4].format(i)
    with open(name, "wb") as handle:
        handle.write(os.urandom(5 << 20))
    if i % 2:
        try:
            os.utime(name, (0, 0))
        except OSError as exc:
            print("utime refused", exc.strerror)
print("wrote 40 MB")
"""
    result = box.run(code)
    assert "wrote 40 MB" in result.stdout, result.stderr[-300:]
    assert not result.ok, "the step passed although it wrote past the cap"
    assert disk_usage(box.work) <= 8 << 20, f"{disk_usage(box.work) >> 20} MB left in work/"


# -- devices, owners and the hostname, as root (item 4) --------------------------------------------

ROOT_ATTACKS = """
import ctypes, os, stat
def attempt(what, action):
    try:
        action()
        print("done", what)
    except OSError as exc:
        print("refused", what, exc.strerror)
def sethostname():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.sethostname(b"dsstar-pwned", 12) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
attempt("mknod", lambda: os.mknod("loop0", stat.S_IFBLK | 0o666, os.makedev(7, 0)))
attempt("chmod", lambda: os.chmod(CANARY, 0o777))
attempt("chown", lambda: os.chown(CANARY, 65534, 65534))
attempt("sethostname", sethostname)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod, chown and sethostname matter as root")
@pytest.mark.tiers("strong", "medium", reason="a root script keeps what root may do to its own files")
def test_root_cannot_make_devices_change_owners_or_the_hostname(box):
    hostname = socket.gethostname()
    canary = box.outside.env_file
    result = box.run(f"CANARY = {str(canary)!r}\n{ROOT_ATTACKS}")
    assert socket.gethostname() == hostname, "the host's name changed"
    for what in ("mknod", "chmod", "chown"):
        assert f"refused {what}" in result.stdout, result.stdout + result.stderr
    if box.tier == "medium":  # strong promises the host's name only (the script has a UTS namespace of its own).
        assert "refused sethostname" in result.stdout
    device = box.work / "loop0"
    assert not os.path.lexists(device) or not stat.S_ISBLK(os.lstat(device).st_mode)
    # The canary's mode and owner: the `outside` fixture compares them at the end.


# -- the private /tmp of the strong tier -----------------------------------------------------------

FILL_TMP = """
import glob, os
written = 0
try:
    for i in range(8):  # 8 x 48 MB, each file under the file-size limit
        with open(f"/tmp/fill{i}", "wb") as handle:
            for _ in range(48):
                handle.write(b"x" * (1 << 20))
                written += 1 << 20
    print("no cap: wrote", written >> 20, "MB")
except OSError as exc:
    print("cap after", written >> 20, "MB:", exc.strerror)
finally:
    for path in glob.glob("/tmp/fill*"):
        os.remove(path)
"""


@pytest.mark.tiers("strong", reason="only strong gives a script a /tmp of its own (in medium every script's "
                                    "escape attempts check that the host /tmp refuses writes)")
def test_the_private_tmp_is_capped(box):
    result = box.run(FILL_TMP)
    assert "cap after" in result.stdout, result.stdout + result.stderr[-300:]
