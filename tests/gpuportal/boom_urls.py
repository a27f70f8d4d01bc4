"""The project's URLs plus one view that fails, to see the 500 page a user would get."""
from django.urls import path

from gpuportal.urls import urlpatterns as project_urls


def boom(request):
    raise RuntimeError("secret detail: the database password is hunter2")


urlpatterns = [path("boom/", boom)] + project_urls
