"""bench/scale.py without a corpus: its arguments, the point plan, the memory estimate, the
CPU and import ratios from fake runs, the printed row and the SVG chart from fake numbers."""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET

import pytest

from bench import scale
from bench.load.workload import READ
from bench.scale_plot import log_ticks, nice_max, series, write_svg
from bench.scale_raw import deferred_indexes, retarget, written_tables


def test_defaults_are_the_issue_s_points() -> None:
    args = scale.parser().parse_args([])
    assert args.sizes == [10_000, 100_000, 1_000_000]
    assert args.dims == [384]
    assert args.compare == [(100_000, 1536)]
    assert args.ratio_size == 100_000
    assert scale.plan_points(args.sizes, args.dims, args.compare) == [
        (10_000, 384), (100_000, 384), (100_000, 1536), (1_000_000, 384)]


def test_arguments_parse() -> None:
    args = scale.parser().parse_args(["--sizes", "1_000,5000", "--dims", "384,768",
                                      "--compare", "", "--ratio-size", "0"])
    assert args.sizes == [1000, 5000] and args.dims == [384, 768] and args.compare == []
    assert scale.plan_points([5000, 1000], [384], [(1000, 384)]) == [(1000, 384), (5000, 384)]
    with pytest.raises(argparse.ArgumentTypeError):
        scale.compare_points("100000")


def test_maintenance_work_mem_grows_with_the_graph() -> None:
    assert scale.maintenance_work_mem_for(10_000, 384) == "1GB"
    assert scale.maintenance_work_mem_for(100_000, 1536) == "1GB"
    big = int(scale.maintenance_work_mem_for(1_000_000, 384).removesuffix("GB"))
    assert 2 <= big <= 4


def test_request_question_and_candidates() -> None:
    question, limit = scale.request_question(
        "/api/v1/memory?query=Wer+betreut+N%C3%BC&scope=team&limit=20", 6)
    assert (question, limit) == ("Wer betreut Nü", 20)
    assert scale.request_question("/api/v1/memory?query=x", 6) == ("x", 6)
    assert [scale.vector_candidates(n) for n in (3, 6, 10, 20)] == [8, 8, 12, 22]


def test_bare_statement_uses_the_index_expression() -> None:
    text = scale.bare_statement("hash:x:384:v1", 384, 8).as_string(None)
    assert "c.embedding_key = 'hash:x:384:v1'" in text
    assert 'ORDER BY ("c".embedding::halfvec(384) <=> %s::halfvec(384))' in text
    assert text.endswith("LIMIT 8")
    assert scale.shorten_vectors("<=> '[0,0.1,-2]'::halfvec(3)") == "<=> '[...]'::halfvec(3)"


def _run(count: int, api: float, pg: float, wall: float = 10.0) -> dict:
    return {"routes": {READ: {"count": count, "ok": count, "errors": 0, "p95_ms": 20.0}},
            "cpu": {"wall_seconds": wall, "api_cores": api, "postgres_cores": pg,
                    "generator_cores": 0.01},
            "load_average_before": [1.0, 1.0, 1.0]}


def test_cpu_round_and_summary() -> None:
    # 500 requests in 10 s at 0.2 API cores + 0.1 PostgreSQL cores: 6 ms and 2 ms each
    bare = {"postgres_cpu_ms_per_query": 0.5, "p50_ms": 0.4, "p95_ms": 0.9, "cpu": {}}
    one = scale.cpu_round(_run(500, 0.2, 0.1), bare)
    assert one["api_cpu_ms_per_request"] == pytest.approx(6.0)
    assert one["api_postgres_cpu_ms_per_request"] == pytest.approx(2.0)
    assert one["ratio_total"] == pytest.approx(12.0)
    assert one["ratio_postgres"] == pytest.approx(4.0)
    two = scale.cpu_round(_run(500, 0.3, 0.1), bare)
    three = scale.cpu_round(_run(500, 0.1, 0.1), bare)
    summary = scale.cpu_summary([one, two, three], ["Limit", "  ->  Index Scan using x"])
    assert summary["ratio_total"] == pytest.approx(12.0)
    assert summary["bare_uses_index"] is True


def test_import_pair_ratios() -> None:
    bulk = {"load_seconds": 90.0, "index_seconds": 60.0, "total_seconds": 150.0,
            "total_rows_per_second": 666.7, "rows": 100_000, "load_average_before": [1.0]}
    raw = {"load_seconds": 30.0, "index_seconds": 50.0, "seconds": 80.0}
    pair = scale.import_pair(bulk, raw)
    assert pair["ratio_total"] == pytest.approx(1.88)
    assert pair["ratio_load"] == pytest.approx(3.0)
    assert pair["ratio_index"] == pytest.approx(1.2)
    assert pair["raw_rows_per_second"] == pytest.approx(1250.0)


def test_raw_copy_helpers() -> None:
    assert written_tables({"a": 0, "b": 5}, {"a": 10, "b": 5, "c": 1}) == {"a": 10, "c": 1}
    names = deferred_indexes("hash:x:384:v1")
    assert "agent_memory_chunks_tsv_idx" in names
    assert any(n.startswith("agent_memory_chunks_hnsw_") for n in names)
    definition = ("CREATE INDEX agent_memory_chunks_tsv_idx ON public.agent_memory_chunks"
                  " USING gin (content_tsv)")
    assert retarget(definition, "agent_memory_chunks", "agent_memory_chunks_tsv_idx") == (
        "CREATE INDEX raw_agent_memory_chunks_tsv_idx ON bench_raw.agent_memory_chunks"
        " USING gin (content_tsv)")


def _points() -> list[dict]:
    def point(n: int, dims: int, lib: float, api: float, rate: float) -> dict:
        return {"n": n, "dims": dims, "load_average": [1.5, 1.0, 1.0],
                "library": {"p50_ms": lib / 2, "p95_ms": lib, "p99_ms": lib * 1.5},
                "api": {"p95_ms": api},
                "cpu": {"api_cpu_ms_per_request": 6.0, "bare_postgres_cpu_ms_per_query": 0.5,
                        "ratio_total": 12.0},
                "import": {"total_rows_per_second": rate, "load_rows_per_second": rate * 2,
                           "index_seconds": n / 1000}}
    return [point(10_000, 384, 8.0, 20.0, 600.0), point(100_000, 384, 11.0, 26.0, 520.0),
            point(100_000, 1536, 14.0, 31.0, 400.0), point(1_000_000, 384, 17.0, 40.0, 450.0)]


def test_svg_from_fake_numbers(tmp_path) -> None:
    target = write_svg(_points(), tmp_path / "images" / "scale.svg", dims=384,
                       subtitle="2026-12-01: 2 cores & co")
    root = ET.parse(target).getroot()  # well-formed XML
    text = target.read_text()
    assert root.tag.endswith("svg")
    assert text.count("<polyline") == 4  # two lines per panel at 384 d
    assert "library search p95 (384 d)" in text and "(1536 d)" in text
    assert "10k" in text and "1M" in text and "&amp; co" in text
    assert series(_points(), ("api", "p95_ms"), 384, same=True) == [
        (10_000.0, 20.0), (100_000.0, 26.0), (1_000_000.0, 40.0)]
    assert series(_points(), ("api", "p95_ms"), 384, same=False) == [(100_000.0, 31.0)]


def test_svg_of_a_single_point(tmp_path) -> None:
    target = write_svg(_points()[:1], tmp_path / "one.svg", dims=384)
    ET.parse(target)
    assert "<polyline" not in target.read_text()  # one point: a marker, no line


def test_axis_helpers_and_row() -> None:
    assert nice_max(17.3) == 20 and nice_max(0.0) == 1.0 and nice_max(600) == 1000
    assert log_ticks(10_000, 1_000_000) == [1e4, 1e5, 1e6]
    assert log_ticks(10_000, 10_000) == [1e4, 1e5]
    row = scale.table_row(_points()[0])
    assert "10,000" in row and "384" in row and "12.0" in row
    assert scale.table_row({"n": 5, "dims": 8}).count("-") >= 8
