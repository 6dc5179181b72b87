"""The jobs page (see dashboards.drill_pages.jobs)."""

from dashboards import drill_pages
from dashboards.app import current_view

drill_pages.jobs(current_view())
