"""The small real test models: present, intact, and of the architecture tests/models.tsv records."""
import hashlib

import gguf
import pytest

from conftest import MODELS, model_path


@pytest.mark.parametrize("mid", sorted(MODELS))
def test_model_file_is_the_recorded_gguf(mid):
    row = MODELS[mid]
    p = model_path(mid)
    # install-deps verified the sha256 when it fetched the file; check again that nothing changed since.
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    assert h.hexdigest() == row["sha256"]
    r = gguf.GGUFReader(str(p))
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    assert arch == row["arch"]
    assert len(r.tensors) > 0
    assert r.fields["tokenizer.ggml.model"] is not None
