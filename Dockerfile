# checkov:skip=CKV_DOCKER_2: one image runs web, worker and beat; each gets its own health check in docker-compose.yml and deploy/gpuposture.yaml
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
RUN useradd --system --uid 10001 --home /app gpuposture
COPY pyproject.toml ./
RUN pip install --no-cache-dir -e . && pip check
COPY . .
RUN mkdir -p static/vendor \
 && cp "$(python -c 'import plotly, pathlib; print(pathlib.Path(plotly.__file__).parent / "package_data" / "plotly.min.js")')" static/vendor/ \
 && SECRET_KEY=build-only GPUPOSTURE_MFA_ENCRYPTION_KEY=build-only-not-a-secret-0123456789 \
    python manage.py collectstatic --noinput \
 && chown -R gpuposture /app/var
USER 10001
EXPOSE 8000
# Worker class, threads and timeout come from gunicorn.conf.py (read from /app).
CMD ["gunicorn", "gpuposture.wsgi", "--bind", "0.0.0.0:8000", "--workers", "3"]
