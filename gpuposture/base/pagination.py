"""API pagination (its own module: DRF resolves it while importing its generic views)."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class StandardPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class CataloguePagination(StandardPagination):
    """For a fixed catalogue (the checks): the same `{"count", "next", "previous",
    "results"}` shape as every list, with a page that holds the whole catalogue, so a client
    looking for one id on page 1 finds it. `?page_size=` still narrows it."""

    page_size = 100
