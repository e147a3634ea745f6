"""The 1996 token-exchange figure (make figure-mesh) from results folders."""

import json

from beonet import cli
from beonet.benchmarks import figures


def _aggregates(folder, rows):
    folder.mkdir()
    out = []
    for cls, pairs, size, summed, union, cap in rows:
        for proto in ("udp", "tcp"):
            out.append({"class": cls, "pairs": pairs, "size": size, "proto": proto,
                        "exchange_MBps": union, "sum_exchange_MBps": summed,
                        "capacity_MBps": cap})
    (folder / "results.json").write_text(json.dumps({"aggregate": out, "environment": {"kernel": "k"}}))
    return str(folder)


def test_mesh_figure_sets_the_lab_beside_the_paper(tmp_path, capsys):
    single = _aggregates(tmp_path / "single", [("same-segment", 1, 8192, 1.18, 1.18, 0.625),
                                               ("same-segment", 7, 8192, 1.2, 1.1, 0.625),
                                               ("same-segment", 7, 1024, 1.0, 0.9, 0.625)])
    mesh = _aggregates(tmp_path / "mesh", [("same-segment", 7, 8192, 6.0, 5.0, 4.375),
                                           ("gateway-1", 7, 8192, 2.4, 2.0, 1.5),
                                           ("p2p", 7, 8192, 9.0, 9.0, 9.0)])
    fig = figures.mesh(single, mesh)
    assert [(r["line"], r["pairs"], r["size"]) for r in fig["rows"]] == [
        ("single net", 1, 8192), ("single net", 7, 1024), ("single net", 7, 8192),
        ("routed mesh, local", 7, 8192), ("routed mesh, remote", 7, 8192)]
    local = fig["rows"][3]
    assert local["exchange_MBps"] == 6.0 and local["union_MBps"] == 5.0 and local["capacity_MBps"] == 8.75
    text = figures.mesh_markdown(fig, "t")
    assert "| routed mesh, local | 6.00 | 5.00 | 8.75 | 6.30 |" in text
    assert "| local / remote | 2.50 | — | — | 2.3" in text
    out = tmp_path / "fig"
    assert cli.main(["mesh-figure", "--single", single, "--mesh", mesh, "-o", str(out)]) == 0
    assert {"figure.json", "summary.md", "token-exchange.svg"} <= {p.name for p in out.iterdir()}
    assert cli.main(["mesh-figure", "--single", str(tmp_path), "--mesh", mesh, "-o", str(out)]) == 2
    assert "no results.json" in capsys.readouterr().err
