"""The preemption page (see dashboards.pages.preemption)."""

from dashboards import pages
from dashboards.app import current_view

pages.preemption(current_view())
