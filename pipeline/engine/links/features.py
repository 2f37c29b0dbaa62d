"""What a market's title says, read in polars: the dates it names, its numbers, its direction, its topic words.

Month names become numbers first (`Nov 29, 2026` -> `d2026-11-29`, `March 2027` -> `d2027-03`), years alone become
`y2027`, so that the numbers left are the question's thresholds: `$95,000` -> 95000, `4.25%` -> 4.25, `25 bps` ->
0.25 (percent points). The direction is a level's (above / below / range) or a move's (up / down, a hike or a cut);
the topic is what is left once dates, numbers, direction words and filler words are taken out.
"""

from __future__ import annotations

import polars as pl

_MONTHS = ("jan(?:uary)?", "feb(?:ruary)?", "mar(?:ch)?", "apr(?:il)?", "may", "june?", "july?", "aug(?:ust)?",
           "sep(?:t(?:ember)?)?", "oct(?:ober)?", "nov(?:ember)?", "dec(?:ember)?")
_MOVE = (r"\b(?:cuts?|hikes?|raises?|lowers?|decreases?|increases?)\b[^?]{0,40}?\b(?:rates?|bps|basis points)\b"
         r"|\b(?:rate|rates) (?:cut|hike)s?\b")
_MOVE_UP = r"\b(?:hikes?|raises?|increases?)\b"
_BELOW = (r"\b(?:below|under|less than|lower than|at most|or less|or lower|or below|fewer than|no more than"
          r"|not more than|not exceed)\b")
_ABOVE = r"\b(?:above|over|more than|greater than|higher than|at least|exceeds?|or more|or higher|or above)\b"
_RANGE = r"\b(?:between|range)\b|\d-\d"
_NUMBER = r"\$?\d[\d,]*(?:\.\d+)?(?:\s*(?:%|bps|basis points|k\b))?"
_CLOCK = r"\b\d{1,2}(?::\d\d)?\s*(?:am|pm)\b|\b(?:est|edt|et|utc|pt|pst)\b"
_FILLER = (r"\b(?:will|the|be|on|in|for|by|at|of|a|an|to|and|or|is|are|than|after|before|this|that|its|it|with"
           r"|what|who|which|meeting|price|rate|rates|interest|us|u\.s\.)\b")
# The same thing named two ways across the platforms' titles: the second name becomes the first.
_SYNONYMS = (("fed", r"\bfederal reserve\b|\bfomc\b"), ("fed funds", r"\bfederal funds\b"),
             ("bitcoin", r"\bbtc\b"), ("ethereum", r"\beth\b"),
             ("cpi", r"\bconsumer price index\b"), ("gdp", r"\bgross domestic product\b"))
_DIRECTION_WORDS = "|".join((_BELOW, _ABOVE, _MOVE_UP, r"\b(?:cuts?|lowers?|decreases?|exceed|higher|lower)\b"))


def title_features(markets: pl.DataFrame) -> pl.DataFrame:
    """`markets` (columns platform, id, title) with the dates the title names (`days` YYYY-MM-DD, `months` YYYY-MM,
    `years` YYYY: sorted distinct lists), its `numbers` (sorted distinct floats), `direction`, `topic` (the text
    without dates, times, numbers, direction words and filler words), `names` (its capitalised words, lowercase:
    the people, places and things it names) and `words` (every word of its text and topic, to find names in)."""
    text = pl.col("title").str.to_lowercase()
    for number, month in enumerate(_MONTHS, start=1):
        text = text.str.replace_all(rf"\b{month}\.? (\d)", f"m{number:02d} $1")
    text = (text.str.replace_all(r"m(\d\d) (\d{1,2})(?:st|nd|rd|th)?,? (\d{4})", "d$3-$1-$2")
            .str.replace_all(r"d(\d{4})-(\d\d)-(\d)\b", "d$1-$2-0$3")
            .str.replace_all(r"m(\d\d),? (\d{4})", "d$2-$1")
            .str.replace_all(r"\b(20\d\d)\b", "y$1"))
    plain = (pl.col("_text").str.replace_all(r"\b[dy]\d{4}(?:-\d\d){0,2}\b", " ")
             .str.replace_all(_CLOCK, " ").str.replace_all(r"'s\b", ""))
    framed = markets.with_columns(_text=text).with_columns(_plain=plain)
    move = pl.col("_plain").str.contains(_MOVE)
    direction = (pl.when(move & pl.col("_plain").str.contains(_MOVE_UP)).then(pl.lit("up"))
                 .when(move).then(pl.lit("down"))
                 .when(pl.col("_plain").str.contains(_BELOW)).then(pl.lit("below"))
                 .when(pl.col("_plain").str.contains(_ABOVE)).then(pl.lit("above"))
                 .when(pl.col("_plain").str.contains(_RANGE)).then(pl.lit("range")))
    topic = pl.col("_plain")
    for name, pattern in _SYNONYMS:
        topic = topic.str.replace_all(pattern, name)
    topic = (topic.str.replace_all(_NUMBER, " ").str.replace_all(_DIRECTION_WORDS, " ")
             .str.replace_all(r"[^a-z0-9 ]", " ").str.replace_all(_FILLER, " ")
             .str.replace_all(r"\s+", " ").str.strip_chars())
    days = pl.col("_text").str.extract_all(r"\bd\d{4}-\d\d-\d\d\b").list.eval(pl.element().str.slice(1))
    months = pl.col("_text").str.extract_all(r"\bd\d{4}-\d\d\b").list.eval(pl.element().str.slice(1, 7))
    years = pl.col("_text").str.extract_all(r"\b[dy]\d{4}\b").list.eval(pl.element().str.slice(1, 4))
    words = topic.str.split(" ")
    names = (pl.col("title").str.extract_all(r"\b[A-Z][A-Za-z]{2,}\b")
             .list.eval(pl.element().str.to_lowercase()).list.set_difference(pl.lit(list(_NOT_NAMES))))
    return framed.with_columns(
        words=pl.concat_list(words, pl.col("_plain").str.split(" ")).list.unique(),
        names=names.list.unique().list.sort(),
        days=days.list.unique().list.sort(),
        months=months.list.unique().list.sort(),
        years=years.list.unique().list.sort(),
        numbers=pl.col("_plain").str.extract_all(_NUMBER).list.eval(_number_value(pl.element()))
        .list.unique().list.sort(),
        direction=direction,
        topic=topic,
    ).drop("_text", "_plain")


# Capitalised words that name nothing: a question's first word, months, directions.
_NOT_NAMES = ("will", "the", "who", "what", "which", "when", "how", "does", "did", "is", "are", "can", "yes", "no",
              "above", "below", "over", "under", "before", "after", "by", "in", "on", "at", "for", "of", "to", "be",
              "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
              "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
              "dec", "est", "edt", "utc")


def _number_value(text: pl.Expr) -> pl.Expr:
    """`$95,000` -> 95000.0, `4.25%` -> 4.25, `25 bps` -> 0.25, `90k` -> 90000.0."""
    digits = text.str.extract(r"(\d[\d,]*(?:\.\d+)?)").str.replace_all(",", "").cast(pl.Float64)
    return (pl.when(text.str.contains("bps|basis points")).then(digits / 100)
            .when(text.str.ends_with("k")).then(digits * 1000)
            .otherwise(digits))


def topic_tokens(features: pl.DataFrame) -> pl.DataFrame:
    """One row per (platform, id, token) of the topics: the words candidates are blocked on (3 letters or more)."""
    return (features.select("platform", "id", token=pl.col("topic").str.split(" "))
            .explode("token").filter(pl.col("token").str.len_chars() >= 3).unique())
