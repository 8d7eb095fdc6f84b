"""The scientific stack in every sandbox tier: scipy, statsmodels, scikit-learn and matplotlib import
and compute, and a chart is drawn headless, its font found and its cache kept in the work folder,
on both execution paths (the warm worker and a cold one per script)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from dsstar_cli.sandbox import Executor, tiers

TIERS = ["strong", "strong-bwrap", "medium", "basic"]

SCRIPT = '''
import os
import numpy as np
import scipy.stats
import statsmodels.api as sm
from sklearn.cluster import KMeans
from sklearn.linear_model import LinearRegression
import matplotlib
import matplotlib.pyplot as plt
from matplotlib import font_manager

print("chi2 p:", round(scipy.stats.chi2_contingency([[10, 20], [30, 40]]).pvalue, 4))
x = np.arange(20.0)
y = 3 * x + 2
print("ols slope:", round(sm.OLS(y, sm.add_constant(x)).fit().params[1], 6))
print("sklearn slope:", round(float(LinearRegression().fit(x[:, None], y).coef_[0]), 6))
points = np.array([[0, 0], [0, 1], [10, 10], [10, 11]])
print("clusters:", len(set(KMeans(n_clusters=2, n_init=3, random_state=0).fit(points).labels_)))
os.makedirs("figures", exist_ok=True)
fig, ax = plt.subplots(figsize=(4, 3))
ax.bar(["north", "south", "east"], [10, 20, 15], color="tab:blue")
ax.set_title("Units by region")
ax.set_ylabel("units")
fig.savefig("figures/chart.png", dpi=80, bbox_inches="tight")
print("backend:", matplotlib.get_backend())
print("config:", matplotlib.get_configdir())
print("font:", font_manager.findfont(font_manager.FontProperties(), fallback_to_default=False))
print("FIGURE: figures/chart.png")
'''


@pytest.fixture(params=[(tier, path) for tier in TIERS for path in ("warm", "cold")], ids="-".join)
def executor(request, tmp_path):
    tier, path = request.param
    kind = tier.split("-")[0]
    if not tiers.probe().available.get(kind):
        pytest.skip(f"no {kind} tier here: {tiers.probe().details.get(kind)}")
    options = {}
    if tier == "strong-bwrap":
        works, why = tiers.bubblewrap_works()
        if not works:
            pytest.skip(f"bubblewrap does not work here: {why}")
        options = {"strong_backend": "bubblewrap"}
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("x\n1\n")
    running = Executor(tmp_path / "run" / "work", data, timeout_s=120, memory_mb=4096, tier=kind,
                       warm=path == "warm", **options)
    yield running
    running.close()


def labelled(stdout: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)


def test_the_stack_computes_and_draws_in_every_tier(executor):
    result = executor.run(SCRIPT, "stack")
    assert result.ok, result.stderr
    assert result.stderr == ""  # No warning either (joblib's /dev/shm probe, a missing font).
    found = labelled(result.stdout)
    assert found["chi2 p"] == "0.504"
    assert found["ols slope"] == "3.0" and found["sklearn slope"] == "3.0" and found["clusters"] == "2"
    assert found["backend"].lower() == "agg"
    assert Path(found["config"]) == executor.workdir / ".matplotlib"  # Cache and config in the work folder.
    assert Path(found["font"]).name.startswith("DejaVuSans") and Path(found["font"]).is_file()
    assert_real_png(executor.workdir / "figures" / "chart.png")


def assert_real_png(path: Path) -> None:
    """A PNG that decodes, of a plausible size, with more than one colour in it (a drawn chart)."""
    from PIL import Image

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        assert image.format == "PNG" and image.width > 100 and image.height > 100
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 10
