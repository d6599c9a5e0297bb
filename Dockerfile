# Two stages: the first builds chatql's wheel (and its dependencies' wheels) with the
# build tools; the second installs only those wheels into a clean image and runs as an
# unprivileged user. The same commands CI runs: `pip wheel .` then `pip install`.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY store ./store
COPY gql ./gql
# EXTRAS=otel adds OpenTelemetry tracing to the image.
ARG EXTRAS=""
RUN pip wheel --no-cache-dir --wheel-dir /wheels ".${EXTRAS:+[$EXTRAS]}"

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 --user-group chatql \
    && mkdir /data && chown chatql:chatql /data
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels /wheels/*.whl \
    && rm -rf /wheels
USER chatql
WORKDIR /home/chatql
ENV CHATQL_DATABASE_URL=sqlite+aiosqlite:////data/chatql.db
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"
CMD ["chatql", "serve", "--host", "0.0.0.0", "--port", "8000"]
