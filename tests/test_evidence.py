"""The committed evidence that docs/perf-notes.md cites stays readable by ``kprof report``."""

import json
from pathlib import Path

EVIDENCE = Path(__file__).resolve().parents[1] / "docs" / "evidence"
# saved before sidecars were kept beside renamed results; perf-notes says their JSON keeps summaries only
WITHOUT_SIDECAR = {"fathom/fathom-ranges-s17.json", "speed/fused-variants-s17.json"}


def test_every_result_names_a_sidecar_that_is_beside_it():
    missing = []
    for path in sorted(EVIDENCE.rglob("*.json")):
        try:
            name = json.loads(path.read_text()).get("observations_file")
        except (json.JSONDecodeError, AttributeError):
            continue  # not a Result
        rel = path.relative_to(EVIDENCE).as_posix()
        if name and not (path.parent / name).exists() and rel not in WITHOUT_SIDECAR:
            missing.append(f"{rel} -> {name}")
    assert not missing, "rename the observations_file field with the file: " + "; ".join(missing)
