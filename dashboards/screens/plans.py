"""The plans page (see dashboards.pages.plans)."""

from dashboards import pages
from dashboards.app import current_view

pages.plans(current_view())
