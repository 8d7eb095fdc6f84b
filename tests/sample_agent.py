"""A scripted 'model' that answers the fraud question on sample_data/ the way a good model would:
two steps (add-step path), real scripts that read the data folder, a verifier that wants both."""

from __future__ import annotations

import re

QUESTION = "Which merchant had the highest fraud rate in March 2025?"
DATA_DIR = re.compile(r'DATA_DIR = "([^"]+)"')

STEP_1 = "Load transactions.csv and compute each merchant_id's fraud rate (is_fraud mean) over March 2025."
STEP_2 = "Join merchant names from the 'merchants' sheet of merchants.xlsx and report the merchant with the highest rate."

SCRIPT_1 = '''```python
import pandas as pd
DATA_DIR = "{data}"
tx = pd.read_csv(f"{{DATA_DIR}}/transactions.csv", parse_dates=["timestamp"])
march = tx[(tx["timestamp"].dt.year == 2025) & (tx["timestamp"].dt.month == 3)]
rates = march.groupby("merchant_id")["is_fraud"].mean() * 100
print("fraud rate % by merchant, March 2025:")
print(rates.round(2).sort_values(ascending=False).to_string())
```'''

FINAL = '''```python
import pandas as pd
DATA_DIR = "{data}"
tx = pd.read_csv(f"{{DATA_DIR}}/transactions.csv", parse_dates=["timestamp"])
march = tx[(tx["timestamp"].dt.year == 2025) & (tx["timestamp"].dt.month == 3)]
names = pd.read_excel(f"{{DATA_DIR}}/merchants.xlsx", sheet_name="merchants").set_index("merchant_id")["merchant_name"]
rates = march.groupby("merchant_id")["is_fraud"].mean()
print(names[rates.idxmax()])
```'''


def _data_dir(messages: list[dict]) -> str:
    for message in messages:
        match = DATA_DIR.search(message["content"])
        if match:
            return match.group(1)
    match = re.search(r"folder: ([^)]+)\)", messages[-1]["content"])
    return match.group(1) if match else "."


def _plan_length(messages: list[dict]) -> int:
    return len(re.findall(r"^\d+\. ", messages[-1]["content"].split("# Plan")[-1], re.MULTILINE))


def respond(role: str, messages: list[dict]) -> str:
    data = _data_dir(messages)
    if role == "planner":
        return STEP_1 if "FIRST step" in messages[-1]["content"] else f"Step 2: {STEP_2}"
    if role == "coder":
        return (FINAL if _plan_length(messages) >= 2 else SCRIPT_1).format(data=data)
    if role == "verifier":
        return "Yes. The output names the merchant." if _plan_length(messages) >= 2 else "No: names are missing."
    if role == "router":
        return "Add Step"
    if role == "finalizer":
        return FINAL.format(data=data)
    return "I cannot help with that."
