"""The correct answers to the example questions of docs/sample-data.md, computed from sample_data/ by
the rules in sample_data/business_rules.md. `python tests/sample_answers.py` prints them; a test
checks that the page quotes exactly these."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parent.parent / "sample_data"


def load() -> pd.DataFrame:
    tx = pd.read_csv(DATA / "transactions.csv", parse_dates=["timestamp"])
    merchants = pd.read_excel(DATA / "merchants.xlsx", sheet_name="merchants")
    fx = pd.read_excel(DATA / "merchants.xlsx", sheet_name="fx_rates")
    categories = pd.DataFrame(json.loads((DATA / "categories.json").read_text())["categories"])
    tx["month"] = tx["timestamp"].dt.strftime("%Y-%m")
    tx = tx.merge(fx, on=["month", "currency"], how="left")
    tx["eur_per_unit"] = tx["eur_per_unit"].fillna(1.0)
    tx["amount_eur"] = tx["amount"] * tx["eur_per_unit"]
    tx = tx.merge(merchants, on="merchant_id").merge(categories, on="mcc", suffixes=("", "_category"))
    return tx


def fraud_rates(tx: pd.DataFrame) -> pd.Series:
    return tx.groupby("merchant_name")["is_fraud"].mean() * 100


def answers() -> dict[str, str]:
    tx = load()
    march = tx[tx["timestamp"].dt.month == 3]
    settled = tx[tx["status"] == "settled"]
    q1 = settled[settled["timestamp"].dt.quarter == 1]
    delta = settled[settled["merchant_name"] == "Delta Electronics"]
    discount = delta["tier"].map({"premium": 0.8, "standard": 1.0})
    fees = (delta["amount_eur"] * delta["fee_rate_pct"] / 100 * discount + 0.25).sum()
    whole = fraud_rates(tx)
    risk = tx.groupby("merchant_name")["risk_level"].first()
    high_risk = sorted(name for name in whole.index if risk[name] == "high" or whole[name] > 3)
    return {
        "Which merchant had the highest fraud rate in March 2025?": fraud_rates(march).idxmax(),
        "What was the total net revenue in EUR in Q1 2025? Round to 2 decimals.": f"{q1['amount_eur'].sum():.2f}",
        "How much did Delta Electronics pay in processing fees in 2025, in EUR rounded to 2 decimals?": f"{fees:.2f}",
        "Which merchants are high-risk according to the business rules?": ", ".join(high_risk),
    }


if __name__ == "__main__":
    for question, answer in answers().items():
        print(f"{question}\n  -> {answer}")
    tx = load()
    print(fraud_rates(tx[tx["timestamp"].dt.month == 3]).round(2).sort_values())
    print(fraud_rates(tx).round(2).sort_values())
