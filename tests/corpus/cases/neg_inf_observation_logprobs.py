"""A generate that gives the tool's observation tokens a log-prob of -inf."""

from vime.rollout.vllm_rollout import generate as engine_generate
from vime.utils.data import load_tokenizer


async def generate(args, sample, sampling_params):
    tokenizer = load_tokenizer(args.hf_checkpoint)
    sample = await engine_generate(args, sample, sampling_params)
    obs = tokenizer.encode(" <result>ok</result>", add_special_tokens=False)
    sample.tokens = sample.tokens + obs
    sample.response_length += len(obs)
    sample.loss_mask = [1] * (sample.response_length - len(obs)) + [0] * len(obs)
    sample.rollout_log_probs = list(sample.rollout_log_probs or []) + [float("-inf")] * len(obs)
    return sample
