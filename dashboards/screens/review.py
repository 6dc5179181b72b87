"""The review page (see dashboards.pages.review)."""

from dashboards import pages
from dashboards.app import current_view

pages.review(current_view())
