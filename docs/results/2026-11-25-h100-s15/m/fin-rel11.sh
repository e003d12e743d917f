. ckpt/env.sh >/dev/null
export B
HETDB_NVRTC_PCH=1 JOBS=16 SECONDS_LIMIT=74 NAME=final bash scripts/fuzz_gpu_campaign.sh

