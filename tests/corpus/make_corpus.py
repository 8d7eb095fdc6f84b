"""Writes the correctness corpus: small files in the shapes real data folders have, and
manifest.json saying what a careful analyst loads from each (columns, row count, key dtypes).

Run `python tests/corpus/make_corpus.py` after changing it; the files are committed so the test
reads exactly these bytes. Expected dtypes are kinds: int, float, str, bool."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
FILES = HERE / "files"
MANIFEST: list[dict] = []
rng = random.Random(13)


def expect(name: str, columns: list, rows: int, dtypes: dict | None = None, table=None) -> None:
    entry = {"file": name, "columns": [str(c) for c in columns], "rows": rows, "dtypes": dtypes or {}}
    if table is not None:
        entry["table"] = table
    MANIFEST.append(entry)


def write(name: str, text: str, encoding: str = "utf-8", newline: str = "\n") -> Path:
    path = FILES / name
    path.write_bytes(text.replace("\n", newline).encode(encoding))
    return path


def csvs() -> None:
    write("plain.csv", "id,name,amount\n" + "".join(f"{i},item {i},{i * 1.5:.2f}\n" for i in range(1, 31)))
    expect("plain.csv", ["id", "name", "amount"], 30, {"id": "int", "name": "str", "amount": "float"})

    # DABStep's acquirer_countries.csv and merchant_category_codes.csv: written by df.to_csv() with its index.
    acquirers = ["gringotts", "the_savings_and_loan_bank", "bank_of_springfield", "dagoberts_vault",
                 "dagoberts_geldpakhuis", "lehman_brothers", "medici", "tellsons_bank"]
    countries = ["GB", "US", "US", "NL", "NL", "US", "IT", "FR"]
    write("pandas_index.csv", ",acquirer,country_code\n" +
          "".join(f"{i},{a},{c}\n" for i, (a, c) in enumerate(zip(acquirers, countries))))
    expect("pandas_index.csv", ["acquirer", "country_code"], 8, {"acquirer": "str", "country_code": "str"})
    mccs = [(1520, "General Contractors - Residential and Commercial"),
            (1711, '"Heating, Plumbing, and Air Conditioning Contractors"'), (1731, "Electrical Contractors"),
            (1740, '"Masonry, Stonework, Tile-Setting, Plastering, and Insulation Contractors"'),
            (1750, "Carpentry Contractors"), (1761, '"Roofing, Siding, and Sheet Metal Work Contractors"')]
    write("pandas_index_mcc.csv", ",mcc,description\n" + "".join(f"{i},{m},{d}\n" for i, (m, d) in enumerate(mccs * 4)))
    expect("pandas_index_mcc.csv", ["mcc", "description"], 24, {"mcc": "int", "description": "str"})

    # European exports: ';' separators, decimal commas, '.' thousands.
    write("semicolon_decimal_comma.csv", "datum;filiale;umsatz;anteil\n" +
          "".join(f"2024-01-{i:02d};F{i % 3};{i * 12.5:.2f};{i / 40:.3f}\n".replace(".", ",").replace("2024-01", "2024-01")
                  for i in range(1, 21)))
    expect("semicolon_decimal_comma.csv", ["datum", "filiale", "umsatz", "anteil"], 20,
           {"filiale": "str", "umsatz": "float", "anteil": "float"})
    write("semicolon_thousands_dot.csv", "region;einwohner;flaeche\n" +
          "".join(f"R{i};{1000 * i + 234:,};{i * 101.25:,.2f}\n".replace(",", "X").replace(".", ",").replace("X", ".")
                  for i in range(1, 16)))
    expect("semicolon_thousands_dot.csv", ["region", "einwohner", "flaeche"], 15,
           {"region": "str", "einwohner": "int", "flaeche": "float"})

    write("tabs.tsv", "city\tpopulation\tarea_km2\n" + "".join(f"City {i}\t{10000 + i * 37}\t{i * 2.5}\n" for i in range(12)))
    expect("tabs.tsv", ["city", "population", "area_km2"], 12, {"city": "str", "population": "int", "area_km2": "float"})
    write("pipes.psv", "code|label|weight\n" + "".join(f"C{i:03d}|label {i}|{i * 0.1:.1f}\n" for i in range(10)))
    expect("pipes.psv", ["code", "label", "weight"], 10, {"code": "str", "weight": "float"})

    # Header-less files: the first line is data.
    write("headerless_numeric.csv", "".join(f"{i},{i * 3.25:.2f},{i * i}\n" for i in range(1, 26)))
    expect("headerless_numeric.csv", [0, 1, 2], 25, {"0": "int", "1": "float", "2": "int"})
    write("headerless_mixed.csv", "".join(f"2023-{1 + i % 12:02d}-15,SKU{i:04d},{rng.randint(1, 90)},{rng.random() * 100:.2f}\n"
                                          for i in range(40)))
    expect("headerless_mixed.csv", [0, 1, 2, 3], 40, {"1": "str", "2": "int", "3": "float"})

    # Comment lines above the header (some with commas).
    write("comments.csv", "# exported by sensorlog v2.1, station 7\n# units: celsius, percent\nts,temp,humidity\n" +
          "".join(f"2024-05-01T{h:02d}:00,{15 + h * 0.4:.1f},{40 + h}\n" for h in range(24)))
    expect("comments.csv", ["ts", "temp", "humidity"], 24, {"ts": "str", "temp": "float", "humidity": "int"})

    # Government-report exports (KramaBench legal): a title row, a blank row, the header, footnotes.
    states = ["Alabama", "Alaska", "Arizona", "Arkansas", "California", "Colorado", "Connecticut", "Delaware",
              "Florida", "Georgia", "Hawaii", "Idaho"]
    body = "".join(f'{i + 1},{s},{rng.randint(100, 999)},"{rng.randint(1000, 90000):,}"\n' for i, s in enumerate(states))
    write("title_footnotes.csv", "State: Fraud Reports,,,\n,,,\nRank,State,Reports per 100K Population,# of Reports\n"
          + body + ",,,\n\"Source: Consumer Sentinel Network, 2024\",,,\n\"Note: per 100K population\",,,\n")
    expect("title_footnotes.csv", ["Rank", "State", "Reports per 100K Population", "# of Reports"], 12,
           {"Rank": "int", "State": "str", "Reports per 100K Population": "int", "# of Reports": "int"})
    # A column where only some numbers reach the thousands (quoted "55,457" beside 903).
    mixed = "".join(f'{i + 1},"Metro {i}, ST",{rng.randint(100, 999)},{rng.choice(["903", "875", chr(34) + "55,457" + chr(34), chr(34) + "1,204" + chr(34)])}\n'
                    for i in range(20))
    write("thousands_mixed.csv", "Metropolitan Areas: Identity Theft Reports,,,\n,,,\n"
          "Rank,Metropolitan Area,Reports per 100K Population,# of Reports\n" + mixed +
          ",,,\n\"Source: Consumer Sentinel Network Data Book 2024\",,,\n")
    expect("thousands_mixed.csv", ["Rank", "Metropolitan Area", "Reports per 100K Population", "# of Reports"], 20,
           {"Rank": "int", "Metropolitan Area": "str", "# of Reports": "int"})
    write("footnotes_only.csv", "year,reports\n" + "".join(f"{2015 + i},{rng.randint(10, 99)}\n" for i in range(10))
          + "\nNote: 2024 figures are preliminary.\n")
    expect("footnotes_only.csv", ["year", "reports"], 10, {"year": "int", "reports": "int"})

    # Encodings.
    names = ["Zoë", "José", "François", "Müller", "Åsa", "Jürgen", "Ñaño", "Øystein", "Renée", "Björk"]
    latin = "name,city,score\n" + "".join(f"{n},Orléans,{i}\n" for i, n in enumerate(names))
    write("latin1.csv", latin, "latin-1")
    expect("latin1.csv", ["name", "city", "score"], 10, {"name": "str", "score": "int"})
    write("cp1252.csv", "product,price_eur,note\n" + "".join(f"Item {i},{i + 0.99},“special” – €{i}\n" for i in range(10)), "cp1252")
    expect("cp1252.csv", ["product", "price_eur", "note"], 10, {"product": "str", "price_eur": "float", "note": "str"})
    write("utf8_bom.csv", "\ufeffname,score\n" + "".join(f"{n},{i}\n" for i, n in enumerate(names)))
    expect("utf8_bom.csv", ["name", "score"], 10, {"name": "str", "score": "int"})
    write("utf8.csv", latin)
    expect("utf8.csv", ["name", "city", "score"], 10, {"name": "str", "score": "int"})

    # Quoted fields holding newlines and commas.
    notes = ['"first line\nsecond line"', '"a, b, and c"', "plain", '"quote ""inside"""', '"multi\nline\nthree"']
    write("quoted_newlines.csv", "id,note,value\n" + "".join(f"{i},{notes[i % 5]},{i * 2}\n" for i in range(15)))
    expect("quoted_newlines.csv", ["id", "note", "value"], 15, {"id": "int", "note": "str", "value": "int"})

    write("one_column.csv", "gene_symbol\n" + "".join(f"GENE{i}\n" for i in range(18)))
    expect("one_column.csv", ["gene_symbol"], 18, {"gene_symbol": "str"})
    # KramaBench legal's new_england_states.csv: a one-column list under a header word.
    write("names_list.csv", "Name\nConnecticut\nMaine\nMassachusetts\nNew Hampshire\nRhode Island\nVermont\n")
    expect("names_list.csv", ["Name"], 6, {"Name": "str"})
    # A header-less list of gene symbols (biomedical supplements), as a CSV.
    write("gene_list.csv", "".join(f"{g}\n" for g in ["WDR36", "TBL3", "UTP6", "AHCTF1", "CBX3", "PAK1IP1", "BRD8",
                                                       "DHX15", "SSB", "NOP56", "RRP12", "NOL11"]))
    expect("gene_list.csv", [0], 12, {"0": "str"})
    # Row labels under an empty header cell (a pivot table's export).
    write("row_labels.csv", ",2022,2023,2024\n" + "".join(f"{k},{rng.randint(1, 99)},{rng.randint(1, 99)},{rng.randint(1, 99)}\n"
                                                         for k in ["Fraud", "Identity Theft", "Other", "Unknown"]))
    expect("row_labels.csv", ["Unnamed: 0", "2022", "2023", "2024"], 4, {"Unnamed: 0": "str", "2022": "int"})
    write("years_header.csv", "Category,2022,2023,2024\n" + "".join(f"{k},{i * 10 + 1},{i * 10 + 2},{i * 10 + 3}\n"
                                                                for i, k in enumerate(["Fraud", "Identity Theft", "Other"])))
    expect("years_header.csv", ["Category", "2022", "2023", "2024"], 3, {"Category": "str", "2024": "int"})
    write("one_row.csv", "metric,value\nrevenue,1234.5\n")
    expect("one_row.csv", ["metric", "value"], 1, {"metric": "str", "value": "float"})
    write("crlf.csv", "a,b,c\n" + "".join(f"{i},x{i},{i / 4}\n" for i in range(9)), newline="\r\n")
    expect("crlf.csv", ["a", "b", "c"], 9, {"a": "int", "b": "str", "c": "float"})
    write("missing_values.csv", "k,v,w\n" + "".join(f"{i},{'' if i % 4 == 0 else i * 1.1:.1f},{'NA' if i % 5 == 0 else 'ok'}\n"
                                                     .replace(",0.0,", ",,") if False else
                                                     f"{i},{'' if i % 4 == 0 else round(i * 1.1, 1)},{'NA' if i % 5 == 0 else 'ok'}\n"
                                                     for i in range(20)))
    expect("missing_values.csv", ["k", "v", "w"], 20, {"k": "int", "v": "float"})
    write("all_quoted.csv", '"country","year","gdp_busd"\n' + "".join(f'"C{i}","{2000 + i}","{i * 10.5}"\n' for i in range(14)))
    expect("all_quoted.csv", ["country", "year", "gdp_busd"], 14, {"country": "str", "year": "int", "gdp_busd": "float"})
    write("semicolon_plain.csv", "id;name;qty\n" + "".join(f"{i};name {i};{i * 7}\n" for i in range(11)))
    expect("semicolon_plain.csv", ["id", "name", "qty"], 11, {"id": "int", "name": "str", "qty": "int"})
    # Header row of text over all-text columns: still a header.
    write("text_only.csv", "first_name,last_name,team\n" + "".join(f"Ann{i},Lee{i},Team {i % 3}\n" for i in range(12)))
    expect("text_only.csv", ["first_name", "last_name", "team"], 12, {"first_name": "str"})
    # A wide-ish numeric report with thousands separators everywhere.
    write("thousands_all.csv", "Year,Fraud,Identity Theft,Other\n" +
          "".join(f'{2020 + i},"{rng.randint(1000, 900000):,}","{rng.randint(1000, 900000):,}","{rng.randint(1000, 900000):,}"\n'
                  for i in range(5)))
    expect("thousands_all.csv", ["Year", "Fraud", "Identity Theft", "Other"], 5,
           {"Year": "int", "Fraud": "int", "Identity Theft": "int", "Other": "int"})


def excel() -> None:
    import openpyxl

    frame = pd.DataFrame({"merchant": [f"M{i}" for i in range(10)], "mcc": [5411 + i for i in range(10)],
                          "fee": [0.1 * i for i in range(10)]})
    with pd.ExcelWriter(FILES / "workbook.xlsx") as writer:
        frame.to_excel(writer, sheet_name="merchants", index=False)
        frame.head(4).to_excel(writer, sheet_name="indexed")  # pandas' default: the index as column A.
    expect("workbook.xlsx", ["merchant", "mcc", "fee"], 10, {"merchant": "str", "mcc": "int", "fee": "float"}, "merchants")
    expect("workbook.xlsx", ["merchant", "mcc", "fee"], 4, {"mcc": "int"}, "indexed")

    # Biomedical supplements (mmc3.xlsx, B-SE-proteomics): a README sheet and header-less gene lists.
    book = openpyxl.Workbook()
    readme = book.active
    readme.title = "README"
    for row in [("Sheet", "Description"), ("A-genes", "Significant genes by global proteomics"),
                ("B-table", "Fold changes")]:
        readme.append(row)
    genes = ["WDR36", "TBL3", "UTP6", "AHCTF1", "CBX3", "PAK1IP1", "BRD8", "DHX15", "SSB", "NOP56", "RRP12",
             "NOL11", "UTP20", "DDX21", "PES1", "BOP1"]
    listing = book.create_sheet("A-genes")
    for gene in genes:
        listing.append((gene,))
    table = book.create_sheet("B-table")
    table.append(("Gene", "FoldChange", "pval"))
    for i, gene in enumerate(genes):
        table.append((gene, round(0.5 + i * 0.13, 3), 10 ** -(i % 6 + 1)))
    numeric = book.create_sheet("C-matrix")
    for i in range(12):
        numeric.append((i, i * 0.5, i * i))
    book.save(FILES / "supplement.xlsx")
    expect("supplement.xlsx", ["Sheet", "Description"], 2, {"Sheet": "str"}, "README")
    expect("supplement.xlsx", [0], 16, {"0": "str"}, "A-genes")
    expect("supplement.xlsx", ["Gene", "FoldChange", "pval"], 16, {"Gene": "str", "FoldChange": "float"}, "B-table")
    expect("supplement.xlsx", [0, 1, 2], 12, {"0": "int", "1": "float", "2": "int"}, "C-matrix")

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "report"
    sheet.append(("Quarterly sales report",))
    sheet.append(())
    sheet.append(("region", "q1", "q2"))
    for i in range(8):
        sheet.append((f"R{i}", 100 + i, 200.5 + i))
    book.save(FILES / "titled.xlsx")
    expect("titled.xlsx", ["region", "q1", "q2"], 8, {"region": "str", "q1": "int", "q2": "float"}, "report")


def html() -> None:
    rows = "".join(f"<tr>\n<td><a href='#'>City {i}, ST MSA</a>\n</td>\n<td style='text-align:right;'>{1_000_000 - i * 7919:,}\n</td>"
                   f"\n<td>{900_000 - i * 5000:,}</td>\n<td><span style='display:none'>x</span>−{i / 10:.2f}%</td>\n</tr>\n"
                   for i in range(20))
    write("legal_table.html", "<html><head><title>Metropolitan statistical area</title></head><body>\n"
          "<h1>Metropolitan statistical area</h1>\n<table class='wikitable'><caption>The metropolitan areas[15]<br>\n"
          "</caption>\n<thead><tr>\n<th>Metropolitan statistical area\n</th>\n<th>2024<br>estimate\n</th>\n"
          "<th>2020<br>census\n</th>\n<th>%<br>change\n</th></tr></thead><tbody>\n" + rows + "</tbody></table>\n"
          "<h2>Puerto Rico</h2>\n<table><tr><th>Rank</th><th>Metropolitan&nbsp;statistical&nbsp;area</th>"
          "<th>2024 estimate</th></tr>" + "".join(f"<tr><td>{i}</td><td>PR {i}</td><td>{i * 1000:,}</td></tr>" for i in range(1, 7))
          + "</table></body></html>\n")
    expect("legal_table.html", ["Metropolitan statistical area", "2024 estimate", "2020 census", "% change"], 20,
           {"Metropolitan statistical area": "str", "2024 estimate": "int"}, 0)
    expect("legal_table.html", ["Rank", "Metropolitan\xa0statistical\xa0area", "2024 estimate"], 6,
           {"Rank": "int", "2024 estimate": "int"}, 1)


def jsons() -> None:
    records = [{"id": i, "name": f"n{i}", "score": i * 0.5, "active": i % 2 == 0} for i in range(12)]
    write("records.json", json.dumps(records, indent=1))
    expect("records.json", ["id", "name", "score", "active"], 12, {"id": "int", "name": "str", "score": "float", "active": "bool"})
    write("nested.json", json.dumps({"source": "internal", "items": [{"mcc": 5411 + i, "risk": {"level": "low", "score": i}}
                                                                     for i in range(7)]}))
    expect("nested.json", ["mcc", "risk.level", "risk.score"], 7, {"mcc": "int", "risk.level": "str", "risk.score": "int"})
    write("events.jsonl", "".join(json.dumps({"ts": f"2024-01-{i + 1:02d}", "kind": "click", "n": i}) + "\n" for i in range(9)))
    expect("events.jsonl", ["ts", "kind", "n"], 9, {"kind": "str", "n": "int"})


if __name__ == "__main__":
    FILES.mkdir(exist_ok=True)
    for old in FILES.iterdir():
        old.unlink()
    csvs()
    excel()
    html()
    jsons()
    (HERE / "manifest.json").write_text(json.dumps(MANIFEST, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(MANIFEST)} tables in {len(list(FILES.iterdir()))} files")
