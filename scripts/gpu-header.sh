# Sourced by the GPU check scripts: the line that opens their report ($1: which check) and the
# GPUs this machine has.
echo "== $1 on $(hostname), $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
else
  echo "nvidia-smi: not found"
fi
