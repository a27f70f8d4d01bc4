"""The user's own token page, /account/tokens/ (docs/security.md, "API tokens")."""
from django.urls import path

from . import views

app_name = "teams"

urlpatterns = [
    path("account/tokens/", views.token_list, name="tokens"),
    path("account/tokens/<int:pk>/revoke/", views.token_revoke, name="token-revoke"),
]
