"""Search: filters, rankers (one Ranker interface: SQL and in memory), fusion, snippets, the
query itself, the live index of long-lived processes, and evaluation on labelled queries."""

from oboyu.modes import Mode
from oboyu.search.filters import Filters, make_filters, parse_time
from oboyu.search.live import Answer, IndexSummary, LiveIndex
from oboyu.search.query import Result, search
from oboyu.search.rankers import Ranker, SqlRanker
from oboyu.search.resident import ResidentIndex
from oboyu.search.snippets import make_snippet

__all__ = [
    "Answer", "Filters", "IndexSummary", "LiveIndex", "Mode", "Ranker", "ResidentIndex", "Result", "SqlRanker",
    "make_filters", "make_snippet", "parse_time", "search",
]
