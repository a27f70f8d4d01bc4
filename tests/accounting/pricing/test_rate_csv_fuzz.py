"""import_rates under hypothesis: random CSV-ish text and mutated valid files never crash the
command and never import part of a file (the count of rates is unchanged on any error, and
grows by exactly the file's rows on success)."""
import pytest
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, given, settings, strategies as st

from apps.accounting.models import Rate

HEADER = "gpu_model,mig_profile,hourly_rate,currency,effective_from,price_class"
VALID = [HEADER,
         "NVIDIA H100 80GB HBM3,,2.50,USD,2026-01-01,on_demand",
         "NVIDIA H100 80GB HBM3,1g.10gb,0.40,usd,2026-01-01,",
         "NVIDIA A100-SXM4-80GB,,1.10,EUR,2026-02-01,spot"]
NASTY = ["", ",", '"', "\x00", "\ufeff", "=cmd|' /C calc'!A0", "-1", "1e309", "NaN", "Infinity", "9" * 40,
         "0." + "1" * 40, "x" * 300, "2026-02-30", "+2026-01-01", "usd ", "\r", "\n", "\t", "é", "\ud7ff",
         "on_demand", "spot", "reserved", "1g.10gb", "9999-12-31", "0001-01-01", " 2.5 ", "2,5", "\"2.5\""]

cell = st.one_of(st.sampled_from(NASTY), st.text(max_size=12))


@st.composite
def mutated_file(draw):
    rows = [r.split(",") for r in VALID]
    for _ in range(draw(st.integers(1, 4))):
        r = draw(st.integers(0, len(rows) - 1))
        kind = draw(st.sampled_from(["set", "drop_cell", "add_cell", "dup_row", "drop_row"]))
        if kind == "set" and rows[r]:
            rows[r][draw(st.integers(0, len(rows[r]) - 1))] = draw(cell)
        elif kind == "drop_cell" and rows[r]:
            rows[r].pop(draw(st.integers(0, len(rows[r]) - 1)))
        elif kind == "add_cell":
            rows[r].append(draw(cell))
        elif kind == "dup_row":
            rows.append(list(rows[r]))
        elif kind == "drop_row" and len(rows) > 1:
            rows.pop(r)
    return draw(st.sampled_from(["\n", "\r\n"])).join(",".join(r) for r in rows)


@st.composite
def one_bad_cell(draw):
    """The valid file with one data cell replaced: the likeliest real mistake."""
    rows = [r.split(",") for r in VALID]
    r, c = draw(st.integers(1, len(rows) - 1)), draw(st.integers(0, 5))
    rows[r][c] = draw(cell)
    return "\n".join(",".join(row) for row in rows)


files = st.one_of(one_bad_cell(), mutated_file(), st.text(max_size=300),
                  st.lists(st.lists(cell, max_size=7).map(",".join), max_size=6).map("\n".join))


def import_text(tmp_path, text):
    path = tmp_path / "rates.csv"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    call_command("import_rates", str(path), stdout=open("/dev/null", "w"))


@pytest.mark.django_db
@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=files)
def test_import_rates_never_crashes_nor_imports_part_of_a_file(tmp_path, text):
    before = Rate.objects.count()
    try:
        import_text(tmp_path, text)
    except CommandError:
        assert Rate.objects.count() == before, "a refused file must import nothing"
        return
    data_rows = [line for line in text.replace("\r\n", "\n").split("\n")[1:] if line.strip(" ,\t\r")]
    assert Rate.objects.count() - before <= len(data_rows)
    Rate.objects.all().delete()   # the next example starts from an empty rate card


@pytest.mark.django_db
def test_the_valid_file_imports(tmp_path):
    import_text(tmp_path, "\n".join(VALID))
    assert Rate.objects.count() == 3


@pytest.mark.django_db
@pytest.mark.parametrize("row", [
    "x" * 300 + ",,2.50,USD,2026-01-01,on_demand",          # longer than the column
    "H100," + "p" * 80 + ",2.50,USD,2026-01-01,on_demand",   # MIG profile too long
    "H100,," + "9" * 40 + ",USD,2026-01-01,on_demand",       # more digits than stored
    "H100,,0." + "1" * 40 + ",USD,2026-01-01,on_demand",      # more decimals than stored
    "H100\x00,,2.50,USD,2026-01-01,on_demand",               # NUL: Postgres text cannot hold it
    "H100,,1e309,USD,2026-01-01,on_demand",
])
def test_values_the_database_cannot_hold_are_refused_by_line(tmp_path, row):
    Rate.objects.create(gpu_model="kept", hourly_rate=1, currency="USD", effective_from="2026-01-01")
    with pytest.raises(CommandError) as exc:
        import_text(tmp_path, "\n".join(VALID + [row]))
    assert "line 5" in str(exc.value)
    assert Rate.objects.count() == 1


@pytest.mark.django_db
def test_every_nasty_value_in_every_column_is_imported_whole_or_refused(tmp_path):
    """The deterministic sweep behind the random search: each NASTY value in each column of a row."""
    for column in range(6):
        for value in NASTY:
            rows = [r.split(",") for r in VALID]
            rows[2][column] = value
            text = "\n".join(",".join(r) for r in rows)
            try:
                import_text(tmp_path, text)
            except CommandError:
                assert Rate.objects.count() == 0, (column, value)
            else:
                assert Rate.objects.count() == 3, (column, value)
                Rate.objects.all().delete()
