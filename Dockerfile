# pykueue controller image: `docker build -t pykueue .`; config/manager/deployment.yaml runs it.
FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m pip install --no-cache-dir --prefix=/install .

FROM python:3.12-slim
COPY --from=build /install /usr/local
# no root: the Deployment also sets runAsNonRoot and a read-only root filesystem (scratch in /tmp)
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin pykueue
USER 65532:65532
WORKDIR /tmp
EXPOSE 9443 8081
ENTRYPOINT ["pykueue"]
CMD ["controller", "--leader-elect", "--webhook-service=kueue-system/kueue-webhook-service", "--webhook-host=0.0.0.0", "--webhook-port=9443", "--health-probe-bind-address=:8081", "--work-dir=/tmp/pykueue"]
