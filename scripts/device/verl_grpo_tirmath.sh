#!/usr/bin/env bash
# verl GRPO on AgentRL/TIRMath-v0 with Qwen2.5-1.5B-Instruct, the envs served by `agentrl serve-env`.
#
# One prepared command for a machine with one GPU (written for an H200; under 10 minutes there):
#
#   MODEL=/path/to/Qwen2.5-1.5B-Instruct bash scripts/device/verl_grpo_tirmath.sh
#
# Needs on that machine: this checkout installed (`make setup`, or `pip install -e '.[verl,serve,math]'`), verl
# with vLLM (`pip install --no-deps verl==0.9.1` plus `pip install vllm`), and the model's weights at $MODEL
# (MODEL may also be a Hugging Face id already in the local cache). What it does:
#   1. starts `agentrl serve-env AgentRL/TIRMath-v0` on 127.0.0.1 (the envs a CPU node would serve);
#   2. writes verl parquet rows: 256 training seeds, 64 held-out seeds (10000+), each naming the served env;
#   3. runs verl's own trainer (verl.trainer.main_ppo) with GRPO, rollout through vLLM, and the `agentrl` agent loop
#      named by its config file; validation on the held-out seeds before training and at the end;
#   4. prints the held-out mean return before and after from verl's console log, and stops the env server.
# The log is in $OUT (or ./verl_run) as train.log; exit status is verl's.
set -euo pipefail

MODEL="${MODEL:-Qwen/Qwen2.5-1.5B-Instruct}"
OUT="${OUT:-$PWD/verl_run}"
STEPS="${STEPS:-12}"
PORT="${PORT:-8011}"
PY="${PYTHON:-python}"
mkdir -p "$OUT"

missing=()
command -v nvidia-smi >/dev/null || missing+=("an NVIDIA GPU (nvidia-smi)")
"$PY" -c "import verl" 2>/dev/null || missing+=("verl: pip install --no-deps verl==0.9.1 && pip install 'agentrl-gym[verl]'")
"$PY" -c "import vllm" 2>/dev/null || missing+=("vllm: pip install vllm")
"$PY" -c "import agentrl.integrations.verl" 2>/dev/null || missing+=("agentrl with its verl extra: pip install -e '.[verl,serve,math]'")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'cannot run: missing %s\n' "${missing[@]}" >&2
  exit 2
fi

agentrl serve-env AgentRL/TIRMath-v0 --port "$PORT" --insecure-loopback --max-sessions 256 >"$OUT/serve-env.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 60); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  sleep 1
done

"$PY" - "$OUT" "$PORT" <<'PYEOF'
import sys
import pandas as pd
from agentrl.integrations.verl import dataset_rows, write_agent_loop_config

out, port = sys.argv[1], sys.argv[2]
url = f"http://127.0.0.1:{port}"
system = "Solve the math problem. You may run Python; end with the final answer in \\boxed{}."
pd.DataFrame(dataset_rows("AgentRL/TIRMath-v0", range(256), system_prompt=system, remote=url)).to_parquet(f"{out}/train.parquet")
pd.DataFrame(dataset_rows("AgentRL/TIRMath-v0", range(10000, 10064), system_prompt=system, remote=url)).to_parquet(f"{out}/val.parquet")
write_agent_loop_config(f"{out}/agent_loops.yaml")
PYEOF

timeout 560 "$PY" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  data.train_files="$OUT/train.parquet" data.val_files="$OUT/val.parquet" \
  data.train_batch_size=16 data.max_prompt_length=1024 data.max_response_length=2048 \
  data.filter_overlong_prompts=true data.return_raw_chat=true \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.actor.optim.lr=1e-6 \
  actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 \
  actor_rollout_ref.actor.use_kl_loss=false \
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async \
  actor_rollout_ref.rollout.n=8 actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 \
  actor_rollout_ref.rollout.calculate_log_probs=true \
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns=4 \
  actor_rollout_ref.rollout.agent.default_agent_loop=agentrl \
  actor_rollout_ref.rollout.agent.agent_loop_config_path="$OUT/agent_loops.yaml" \
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16 \
  trainer.n_gpus_per_node=1 trainer.nnodes=1 \
  trainer.total_training_steps="$STEPS" trainer.test_freq="$STEPS" trainer.save_freq=-1 \
  trainer.val_before_train=true trainer.logger='[console]' \
  trainer.project_name=agentrl trainer.experiment_name=verl_grpo_tirmath \
  2>&1 | tee "$OUT/train.log"
status=${PIPESTATUS[0]}

echo "held-out mean return (verl's val-core metrics), before training then after:"
grep -o "val-core/agentrl/[^ ]*reward[^ ]*:[^ ]*" "$OUT/train.log" || echo "(no validation line found in $OUT/train.log)"
exit "$status"
