"""The inference page (see dashboards.pages.inference)."""

from dashboards import pages
from dashboards.app import current_view

pages.inference(current_view())
