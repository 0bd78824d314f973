"""Inventory pages: clusters, nodes, patch status, bulletins."""

from __future__ import annotations

from django.urls import path, register_converter

from gpuposture.base.converters import StoredNameConverter
from inventory import views
from inventory.bulletins import views as bulletin_views
from inventory.bulletins.vex import views as vex_views

register_converter(StoredNameConverter, "stored_name")

urlpatterns = [
    path("clusters/", views.cluster_list, name="cluster-list"),
    path("clusters/new/", views.cluster_edit, name="cluster-create"),
    path("clusters/<str:name>/edit/", views.cluster_edit, name="cluster-edit"),
    path("clusters/<str:name>/sync/", views.cluster_sync_now, name="cluster-sync"),
    path("clusters/<str:name>/vex/", vex_views.cluster_vex, name="cluster-vex"),
    path("nodes/", views.node_list, name="node-list"),
    path("nodes/<str:cluster>/<stored_name:name>/", views.node_detail, name="node-detail"),
    path("patch/", views.patch_status, name="patch-status"),
    path("patch/sla/", views.patch_sla_edit, name="patch-sla"),
    path("bulletins/", views.bulletin_list, name="bulletin-list"),
    path("bulletins/import/", views.bulletin_import_view, name="bulletin-import"),
    path("bulletins/<int:pk>/", views.bulletin_detail, name="bulletin-detail"),
    path("bulletins/<int:pk>/delete/", bulletin_views.bulletin_delete_view, name="bulletin-delete"),
    path("bulletins/revisions/<int:pk>/", bulletin_views.revision_detail, name="bulletin-revision"),
    path(
        "bulletins/revisions/<int:pk>/decide/",
        bulletin_views.revision_decide,
        name="bulletin-revision-decide",
    ),
]
