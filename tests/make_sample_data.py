"""Regenerate sample_data/ (deterministic content): python tests/make_sample_data.py

A small marketplace: transactions (CSV), merchants and monthly FX rates (Excel, two sheets),
merchant categories (JSON) and the business rules the numbers depend on (Markdown).
"""

from __future__ import annotations

import csv
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

OUT = Path(__file__).resolve().parent.parent / "sample_data"

CATEGORIES = [
    {"mcc": 5732, "name": "Electronics stores", "risk_level": "high", "fee_rate_pct": 2.9},
    {"mcc": 5942, "name": "Book stores", "risk_level": "low", "fee_rate_pct": 1.4},
    {"mcc": 5814, "name": "Fast food and cafes", "risk_level": "low", "fee_rate_pct": 1.6},
    {"mcc": 4722, "name": "Travel agencies", "risk_level": "medium", "fee_rate_pct": 2.2},
    {"mcc": 7995, "name": "Gaming and betting", "risk_level": "high", "fee_rate_pct": 3.5},
    {"mcc": 5912, "name": "Pharmacies", "risk_level": "low", "fee_rate_pct": 1.5},
    {"mcc": 5411, "name": "Grocery stores", "risk_level": "low", "fee_rate_pct": 1.2},
    {"mcc": 5941, "name": "Sporting goods", "risk_level": "medium", "fee_rate_pct": 1.9},
]
# merchant_id, name, mcc, country, tier, onboarded, base fraud probability, mean amount
MERCHANTS = [
    ("M01", "Alpine Outfitters", 5941, "AT", "standard", "2021-03-15", 0.020, 85),
    ("M02", "Blue Harbor Books", 5942, "IE", "premium", "2019-07-01", 0.010, 28),
    ("M03", "Cedar & Co Coffee", 5814, "NL", "standard", "2022-01-20", 0.015, 9),
    ("M04", "Delta Electronics", 5732, "DE", "premium", "2020-05-11", 0.045, 310),
    ("M05", "Evergreen Grocers", 5411, "FR", "standard", "2018-11-30", 0.008, 46),
    ("M06", "Falcon Travel", 4722, "GB", "premium", "2021-09-09", 0.060, 540),
    ("M07", "Golden Gate Gaming", 7995, "US", "standard", "2023-02-14", 0.035, 60),
    ("M08", "Harbor Pharmacy", 5912, "ES", "standard", "2020-08-25", 0.012, 32),
]
CURRENCY = {"GB": "GBP", "US": "USD"}
FX = {  # EUR per unit, by month
    "USD": [0.962, 0.958, 0.925, 0.889, 0.884, 0.861],
    "GBP": [1.193, 1.204, 1.195, 1.172, 1.186, 1.178],
}
MONTH_FRAUD_BOOST = {("M07", 3): 0.11, ("M04", 3): 0.04}  # A March spike that makes the question sharp.


def transactions(rng: random.Random) -> list[dict]:
    rows, start = [], datetime(2025, 1, 1)
    for i in range(1, 3001):
        merchant = rng.choices(MERCHANTS, weights=[14, 12, 20, 9, 18, 6, 8, 13])[0]
        mid, _, _, country, _, _, fraud_p, mean_amount = merchant
        when = start + timedelta(seconds=rng.randrange(181 * 86400))
        fraud_p += MONTH_FRAUD_BOOST.get((mid, when.month), 0.0)
        is_fraud = rng.random() < fraud_p
        status = "chargeback" if is_fraud and rng.random() < 0.6 else rng.choices(
            ["settled", "refunded", "chargeback"], weights=[93, 6, 1])[0]
        rows.append({
            "tx_id": f"T{i:05d}",
            "timestamp": when.strftime("%Y-%m-%d %H:%M:%S"),
            "merchant_id": mid,
            "amount": round(max(1.0, rng.gauss(mean_amount, mean_amount * 0.35)), 2),
            "currency": CURRENCY.get(country, "EUR"),
            "card_country": rng.choice([country] * 4 + ["DE", "FR", "US", "GB", "IT", "NL"]),
            "status": status,
            "is_fraud": int(is_fraud),
        })
    return sorted(rows, key=lambda r: r["timestamp"])


RULES = """# Payments business rules

These rules define how the finance team computes every figure. Numbers in the other files
are raw: apply these rules before reporting anything.

## Currencies

All reported amounts are in EUR. Convert each transaction with the `fx_rates` sheet of
`merchants.xlsx`, using the rate of the transaction's month (`eur_per_unit`). EUR
transactions are already in EUR.

## Net revenue

Net revenue counts **settled** transactions only. Refunded and chargeback transactions are
excluded from revenue, whatever their amount.

## Fraud rate

The fraud rate of a merchant over a period is the number of its transactions flagged
`is_fraud = 1` divided by the number of all its transactions in that period (every status).
Report it as a percentage.

## Processing fees

Every settled transaction pays a processing fee, in EUR:

    fee = amount_eur * fee_rate_pct / 100 + 0.25

where `fee_rate_pct` comes from the merchant's category in `categories.json` (matched on
the merchant's `mcc`). Premium-tier merchants get a 20 % discount on the percentage part
(the fixed 0.25 EUR is not discounted). Refunded and chargeback transactions pay no fee.

## High-risk merchants

A merchant is high-risk when its category's `risk_level` is `high`, or when its fraud rate
over the whole period (January to June 2025) is above 3 %.
"""


def main() -> None:
    OUT.mkdir(exist_ok=True)
    rng = random.Random(20250301)
    rows = transactions(rng)
    with (OUT / "transactions.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    merchants = pd.DataFrame(
        [m[:6] for m in MERCHANTS],
        columns=["merchant_id", "merchant_name", "mcc", "country", "tier", "onboarded"],
    )
    fx = pd.DataFrame(
        [{"month": f"2025-{m + 1:02d}", "currency": cur, "eur_per_unit": rates[m]}
         for cur, rates in FX.items() for m in range(6)]
    )
    with pd.ExcelWriter(OUT / "merchants.xlsx", engine="openpyxl") as writer:
        merchants.to_excel(writer, sheet_name="merchants", index=False)
        fx.to_excel(writer, sheet_name="fx_rates", index=False)
    (OUT / "categories.json").write_text(
        json.dumps({"source": "internal MCC table, 2025 edition", "categories": CATEGORIES}, indent=2) + "\n",
        encoding="utf-8",
    )
    (OUT / "business_rules.md").write_text(RULES, encoding="utf-8")


if __name__ == "__main__":
    main()
