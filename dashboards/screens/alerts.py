"""The alerts page (see dashboards.pages.alerts)."""

from dashboards import pages
from dashboards.app import current_view

pages.alerts(current_view())
