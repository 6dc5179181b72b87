"""The idle page (see dashboards.pages.idle)."""

from dashboards import pages
from dashboards.app import current_view

pages.idle(current_view())
