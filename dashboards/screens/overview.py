"""The overview page (see dashboards.pages.overview)."""

from dashboards import pages
from dashboards.app import current_view

pages.overview(current_view())
