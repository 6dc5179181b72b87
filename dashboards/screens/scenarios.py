"""The scenarios page (see dashboards.pages.scenarios)."""

from dashboards import pages
from dashboards.app import current_view

pages.scenarios(current_view())
