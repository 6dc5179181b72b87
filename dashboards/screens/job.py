"""The job page (see dashboards.drill_pages.job)."""

from dashboards import drill_pages
from dashboards.app import current_view

drill_pages.job(current_view())
