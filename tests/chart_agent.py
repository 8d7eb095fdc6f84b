"""A scripted 'model' for chart and table questions on sample_data/: one step, a real script that
draws a chart with matplotlib into figures/ and prints its path, a verifier that accepts it, and a
finalizer that answers with a line (a chart question) or a CSV table (a table question)."""

from __future__ import annotations

from fake_openai import as_text
from sample_agent import _data_dir

CHART_QUESTION = "Plot the number of settled transactions per month and currency."
TABLE_QUESTION = "Give the number of settled transactions per currency, as a table."
STEP = "Count settled transactions per month and currency in transactions.csv, and draw them as a bar chart."
FIGURE = "figures/settled_by_month.png"

SCRIPT = '''```python
import os
import matplotlib.pyplot as plt
import pandas as pd
DATA_DIR = "{data}"
tx = pd.read_csv(f"{{DATA_DIR}}/transactions.csv", parse_dates=["timestamp"])
settled = tx[tx["status"] == "settled"]
counts = settled.groupby([settled["timestamp"].dt.strftime("%Y-%m"), "currency"]).size().unstack(fill_value=0)
os.makedirs("figures", exist_ok=True)
ax = counts.plot(kind="bar", figsize=(6, 4))
ax.set_title("Settled transactions per month and currency")
ax.set_xlabel("month")
ax.set_ylabel("transactions")
plt.savefig("{figure}", dpi=80, bbox_inches="tight")
print(counts.to_string())
print("per currency:", settled["currency"].value_counts().sort_index().to_dict())
print("FIGURE: {figure}")
```'''

TABLE_FINAL = '''```python
import pandas as pd
DATA_DIR = "{data}"
tx = pd.read_csv(f"{{DATA_DIR}}/transactions.csv")
counts = tx[tx["status"] == "settled"]["currency"].value_counts().sort_index()
print(counts.rename_axis("currency").reset_index(name="settled_transactions").to_csv(index=False).strip())
```'''


def respond(role: str, messages: list[dict], table: bool = False) -> str:
    data = _data_dir(as_text(messages))
    if role == "planner":
        return STEP
    if role == "coder":
        return SCRIPT.format(data=data, figure=FIGURE)
    if role == "verifier":
        return "Yes. The chart is drawn and the counts are printed."
    if role == "router":
        return "Add Step"
    if role == "finalizer":
        return TABLE_FINAL.format(data=data) if table else f"```answer\nthe chart is in {FIGURE}\n```"
    return "I cannot help with that."


def respond_table(role: str, messages: list[dict]) -> str:
    return respond(role, messages, table=True)
