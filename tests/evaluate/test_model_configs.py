"""conf/model/: every system instantiates offline; the roster is complete and consistent; the SLURM
launcher config, the sweep entry point and the GPU workflow are valid. No GPU, no network."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from omegaconf import OmegaConf

from memlens.core.compose import load_settings
from memlens.eval.evaluate.stage import build_model
from memlens.eval.systems.base import Model
from memlens.eval.systems.hf_transformers import TransformersModel
from memlens.eval.systems.openai_model import OpenAICompatibleModel
from memlens.eval.systems.vllm_server import VLLMServerModel
from memlens.sweep import GENERIC, gpu_models, plan
from tests.conftest import REPO

MODEL_DIR = REPO / "conf" / "model"
ALL = sorted(p.stem for p in MODEL_DIR.glob("*.yaml"))
RAW = {n: yaml.safe_load((MODEL_DIR / f"{n}.yaml").read_text()) or {} for n in ALL}
#: memory agents (kind: agent) and stand-in systems with planted errors (kind: standin): not roster LVLMs
AGENTS = {n for n in ALL if RAW[n].get("kind") == "agent"}
STANDINS = {n for n in ALL if RAW[n].get("kind") == "standin"}
#: the roster: the LVLMs of conf/model (kind: lvlm) but the generic backends (templates); baselines
#: and memory agents are systems of their own (their facts are in their YAML files too)
ROSTER = [n for n in ALL if RAW[n].get("kind") == "lvlm" and n not in GENERIC]
#: API models: the roster LVLMs behind the OpenAI-compatible client (the others are served by vLLM)
APIS = {n for n in ROSTER if RAW[n]["_target_"] == "memlens.eval.systems.openai_model.OpenAICompatibleModel"}
#: the paper's roster (a fact about the paper, not about conf/)
REQUIRED = {
    "gpt-5.4",
    "claude-sonnet-4.5",
    "gemini-3.1-pro",
    "kimi-k2.5",
    "qwen3.5-122b-a10b",
    "qwen3-vl-8b-instruct",
    "qwen3-vl-8b-thinking",
    "qwen3-vl-235b-a22b-instruct",
    "glm-4.6v",
    "glm-4.5v",
    "gemma3-27b",
    "gemma3-12b",
    "gemma3-4b",
    "phi4-multimodal",
    "cosmos-reason2-8b",
    "nemotron-nano-12b-v2-vl",
}


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "MOONSHOT_API_KEY"):
        monkeypatch.delenv(k, raising=False)


@pytest.mark.parametrize("name", ALL)
def test_every_model_config_instantiates_offline(name):
    cfg = load_settings([f"model={name}"], root=REPO)
    model = build_model(cfg)
    assert isinstance(model, Model) and model.name
    if name not in GENERIC:
        assert model.name == name
    # standalone (no eval section): interpolations fall back to their defaults
    alone = OmegaConf.load(MODEL_DIR / f"{name}.yaml")
    from hydra.utils import instantiate

    assert isinstance(instantiate(alone, _convert_="all"), Model)
    model.close()


@pytest.mark.parametrize("name", ROSTER)
def test_roster_entry(name):
    raw = yaml.safe_load((MODEL_DIR / f"{name}.yaml").read_text())
    for key in ("name", "_target_", "hf_id", "context_window", "thinking", "max_new_tokens"):
        assert key in raw, key
    assert raw["name"] == name
    assert raw["max_new_tokens"] == (16384 if raw["thinking"] else 2048)
    assert isinstance(raw["context_window"], int) and raw["context_window"] >= 65536
    model = build_model(load_settings([f"model={name}"], root=REPO))
    if name in APIS:
        assert isinstance(model, OpenAICompatibleModel) and not isinstance(model, VLLMServerModel)
        assert raw["api_key_env"] and raw["base_url"].startswith("https://")
    else:
        assert isinstance(model, VLLMServerModel)
        res = raw["resources"]
        assert res["accelerator"] == "A100-80GB" and res["gpus"] == res["tensor_parallel_size"] >= 1
        assert raw["hf_id"].count("/") == 1
        argv = model.command(8000)
        assert argv[argv.index("--tensor-parallel-size") + 1] == str(res["tensor_parallel_size"])
        assert int(argv[argv.index("--max-model-len") + 1]) <= raw["context_window"]
    assert model.config.max_new_tokens == raw["max_new_tokens"]
    assert model.layout == "messages"


@pytest.mark.parametrize("name", ROSTER)
def test_roster_sizes(name):
    """Every roster model's card: total and active parameters (null only for unpublished API sizes)."""
    raw = RAW[name]
    assert "params_total_b" in raw and "params_active_b" in raw, name
    if name in APIS - {"kimi-k2.5"}:
        assert raw["params_total_b"] is None
    else:
        assert raw["params_total_b"] >= raw["params_active_b"] > 0


def test_sizes_follow_the_paper_roster():
    paper = {"kimi-k2.5": 1000, "qwen3.5-122b-a10b": 122, "qwen3-vl-235b-a22b-instruct": 235, "glm-4.6v": 106}
    paper |= {"glm-4.5v": 106, "gemma3-27b": 27, "gemma3-12b": 12, "gemma3-4b": 4, "phi4-multimodal": 5.6}
    paper |= {"cosmos-reason2-8b": 8, "nemotron-nano-12b-v2-vl": 12, "qwen3.5-2b": 2, "qwen3-vl-2b-instruct": 2}
    assert {n: RAW[n]["params_total_b"] for n in paper} == paper
    assert (
        RAW["qwen3.5-122b-a10b"]["params_active_b"] == 10
        and RAW["qwen3-vl-235b-a22b-thinking"]["params_active_b"] == 22
    )


def test_backbones_name_existing_configs():
    named = {n: RAW[n]["backbone_config"] for n in AGENTS | STANDINS if RAW[n].get("backbone_config")}
    assert named["m2a"] == named["hybrid-pixel"] == "qwen3-vl-8b-instruct"
    assert named["standin-agent-8b"] == "standin-8b"
    for agent, backbone in named.items():
        assert backbone in ALL and RAW[backbone].get("kind") != "agent", agent


def test_card_keys_are_not_part_of_the_identity():
    from memlens.core.compose import load_config, load_settings
    from memlens.core.settings import operational_keys
    from memlens.eval.results import system_identity

    for name in ("hybrid-pixel", "qwen3-vl-8b-instruct"):
        cfg = OmegaConf.to_container(load_config([f"model={name}"], root=REPO).model, resolve=True)
        operational = operational_keys(type(load_settings([f"model={name}"], root=REPO).model))
        ident = system_identity(cfg, operational=operational)
        assert {"params_total_b", "backbone_config"} & set(cfg), name  # the card keys are there
        assert not {"params_total_b", "params_active_b", "backbone_config"} & set(ident), name
        assert system_identity({**cfg, "params_total_b": 99}, operational=operational) == ident


def test_roster_covers_the_paper():
    assert set(ROSTER) >= REQUIRED
    assert {n for n in ROSTER if n.startswith("qwen3-vl-")} >= {
        f"qwen3-vl-{s}-{v}" for s in ("8b", "235b-a22b") for v in ("instruct", "thinking")
    }


def test_eval_layout_reaches_the_model():
    model = build_model(load_settings(["model=gemma3-4b", "eval.layout=legacy"], root=REPO))
    assert model.layout == "legacy"


def test_api_config_details():
    gpt = build_model(load_settings(["model=gpt-5.4"], root=REPO))
    assert gpt.config.temperature is None and gpt.request_overrides() == {
        "max_new_tokens": None,
        "max_completion_tokens": 16384,
    }
    nem = build_model(load_settings(["model=nemotron-nano-12b-v2-vl"], root=REPO))
    assert nem.system_prefix == "/no_think\n"
    generic = build_model(
        load_settings(
            ["model=openai_compatible", "model.base_url=http://127.0.0.1:8000/v1", "model.model=qwen3-vl-8b"], root=REPO
        )
    )
    assert generic.name == "qwen3-vl-8b" and generic.config.base_url == "http://127.0.0.1:8000/v1"
    hf = build_model(load_settings(["model=transformers", "model.model_path=/models/x"], root=REPO))
    assert isinstance(hf, TransformersModel) and hf.model is None  # nothing loaded at instantiation


def test_gpu_models_and_plan():
    rows = {r["model"]: r for r in gpu_models(REPO)}
    assert set(rows) == set(ROSTER) - APIS
    assert rows["qwen3-vl-235b-a22b-instruct"]["gpus"] == 8 and rows["qwen3-vl-8b-instruct"]["gpus"] == 1
    cmds = plan(REPO, ["qwen3-vl-8b-instruct", "glm-4.6v", "gpt-5.4"], ["32k", "64k"], "slurm_a100")
    assert len(cmds) == 3
    assert cmds[-1].endswith(
        "python -m memlens.sweep -m hydra/launcher=slurm_a100 "
        "hydra.launcher.gpus_per_node=8 model=glm-4.6v 'eval.lengths=[32k],[64k]'"
    )


def test_slurm_launcher_config(monkeypatch):
    """hydra/launcher=slurm_a100 composes, instantiates the submitit SlurmLauncher, and gives the sbatch
    script that the launcher would submit (built exactly as the launcher builds its executor; not submitted)."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    import warnings

    import submitit
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.utils import instantiate
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    GlobalHydra.instance().clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecated automatic schema matching
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base=None):
            cfg = compose(
                config_name="config",
                return_hydra_config=True,
                overrides=[
                    "hydra/launcher=slurm_a100",
                    "hydra.launcher.gpus_per_node=4",
                    "hydra.launcher.partition=a100",
                    "hydra.sweep.dir=/tmp/sweep",
                    "hydra.job.name=sweep",
                ],
            )
    GlobalHydra.instance().clear()
    assert cfg.hydra.launcher._target_.endswith("SlurmLauncher")
    launcher = instantiate(cfg.hydra.launcher)
    params = launcher.params
    assert params["gpus_per_node"] == 4 and params["partition"] == "a100" and params["timeout_min"] == 1440
    # what SlurmLauncher.launch does, minus the submission (srun is not installed here)
    monkeypatch.setattr(submitit.SlurmExecutor, "affinity", classmethod(lambda cls: 1))
    ex = submitit.AutoExecutor(
        cluster="slurm", folder=params["submitit_folder"], slurm_max_num_timeout=params["max_num_timeout"]
    )
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    ex.update_parameters(
        **{
            k if k in base else f"slurm_{k}": v
            for k, v in params.items()
            if k not in ("submitit_folder", "max_num_timeout")
        }
    )
    text = ex._executor._make_submission_file_text("python -m memlens.sweep", "uid")
    for line in (
        "#SBATCH --gpus-per-node=4",
        "#SBATCH --partition=a100",
        "#SBATCH --constraint=a100-80gb",
        "#SBATCH --time=1440",
        "#SBATCH --job-name=memlens-sweep",
        "export HF_HUB_OFFLINE=1",
    ):
        assert line in text, line


def test_gpu_workflow():
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "gpu-eval.yml").read_text())
    jobs = wf["jobs"]
    assert jobs["evaluate"]["runs-on"] == ["self-hosted", "gpu", "a100"]
    run = "\n".join(s.get("run", "") for s in jobs["evaluate"]["steps"])
    assert "dvc exp run" in run and "-S model=${{ matrix.model }}" in run
    assert jobs["evaluate"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    plan_run = "\n".join(s.get("run", "") for s in jobs["plan"]["steps"])
    assert "memlens.sweep" in plan_run and "--gpu-models" in plan_run


@pytest.mark.slow
def test_sweep_multirun_entry_point(tiny_project, tmp_path):
    """`python -m memlens.sweep -m ...` runs one evaluate job per model x length."""
    import shutil

    root = tmp_path / "proj"
    shutil.copytree(tiny_project, root)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("MEMLENS_ROOT", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memlens.sweep",
            "-m",
            "model=refuse,chance",
            "eval.lengths=[32k],[64k]",
            "data.scale=tiny",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    from memlens.core.config import Paths
    from memlens.core.items import BuiltBenchmark

    bench = BuiltBenchmark(Paths(root))
    for m in ("refuse", "chance"):
        for n in ("32k", "64k"):
            path = root / "data" / "predictions" / m / "standard" / f"{n}.jsonl"
            assert len(path.read_text().splitlines()) == bench.count(n)
    assert len(list((tmp_path / "sweep").glob("[0-9]*"))) == 4
    listing = subprocess.run(
        [sys.executable, "-m", "memlens.sweep", "--gpu-models"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert {r["model"] for r in json.loads(listing.stdout)} == set(ROSTER) - APIS
