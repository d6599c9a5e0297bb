FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY store ./store
COPY gql ./gql
RUN pip install --no-cache-dir .
ENV CHATQL_DATABASE_URL=sqlite+aiosqlite:////data/chatql.db
EXPOSE 8000
CMD ["chatql", "serve", "--host", "0.0.0.0", "--port", "8000"]
