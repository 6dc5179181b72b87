"""The queues page (see dashboards.pages.queues)."""

from dashboards import pages
from dashboards.app import current_view

pages.queues(current_view())
