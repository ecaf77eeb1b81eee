"""Dialog acts: what a user message does (a task, a rule, a correction ...), which sentences are the
user's rules, and what the assistant's prose states (choices, findings, plans, recaps).

Every pattern here is a general writing habit of people talking to a coding agent; none comes from a
particular session.
"""

from __future__ import annotations

import re

from .layout import listed_rules
from .text import LIST_MARK, MAX_ITEM, clip, sentences, unfenced_lines

# Acknowledgements: a whole message that only agrees, thanks or says "go on".
_ACK = re.compile(
    r"^(?:y|yes|yeah|yep|yo|ok|okay|k|sure|thanks|thank you|thx|go|go ahead|continue|proceed|do it|please do|"
    r"sounds good|great|nice|cool|perfect|lgtm|next|done|no|nope|wow|alright|good|right|hm+)[.!]*$",
    re.IGNORECASE,
)
# A reply that opens by negating or stopping what the assistant did or proposed.
_NEGATING_OPENER = re.compile(
    r"^(?:(?:no|nope|nah)(?:\s*[,.!:;—-]|\s+(?:that|this|it|way|don'?t|not)\b)|wait\b|actually\b|hold on\b|hm+\b|"
    r"scratch that|stop\b|undo\b|revert\b|not (?:like|what|that)\b|that'?s (?:wrong|not)\b|wrong\b|don'?t\b|"
    r"please don'?t\b|instead\b|rather\b)",
    re.IGNORECASE,
)
# Anywhere in a short reply: the user says the result is not what they wanted, or asks for a redo.
_NEGATING_ANYWHERE = re.compile(r"\btry again\b|\bnot what i (?:wanted|asked|meant)\b|\bdon'?t do that\b"
                                r"|\bthat'?s not (?:it|right)\b",
                                re.IGNORECASE)
# Steering without rejecting: a counter-suggestion phrased as a question or preference.
_DIRECTION = re.compile(
    r"\b(?:can'?t we|couldn'?t we|shouldn'?t we|why not|why don'?t we|wouldn'?t it be|how about|what about|"
    r"i'd rather|i would rather|i'd prefer|i think we should)\b",
    re.IGNORECASE,
)
# Verbs that ask for work to be done.
_ACTION = re.compile(
    r"\b(?:add|fix|implement|create|write|make|remove|delete|rename|move|update|refactor|review|check|run|"
    r"commit|push|change|use|port|investigate|build|test|document|clean|split|copy|revert|"
    r"set|tackle|support|handle|release|merge|deduplicate|reorganize|migrate|install|profile|speed|adjust|"
    r"modify|replace|extract|convert|analy[sz]e|plan|propose|close|publish|"
    r"cache|filter|retry|limit|expose|accept|detect|parse|validate|rewrite|wire|drop|keep|finish|start|try|switch|"
    r"put|turn|bump|pin|enable|disable|allow|include|exclude|skip|ignore|return|call|send|store|save)\b",
    re.IGNORECASE,
)
# Requests to look at something (open, show, explain): information, not a goal of the work.
_LOOK = re.compile(r"^(?:\W*(?:ok|okay|so|now|then|please|also|can you|could you)\W+)*(?:open|show|print|"
                   r"tell|explain|read|look|list|display|cat)\b", re.IGNORECASE)
_REQUEST_QUESTION = re.compile(
    r"^(?:\W*(?:ok|okay|alright|so|and|also|btw|hey|then|now)\W+)*(?:can|could|would|will) (?:you|we)\b", re.I)
# Rule words: obligations, prohibitions, preferences, limits (contractions with or without the
# apostrophe: chat users often type "dont").
CONSTRAINT_RE = re.compile(
    r"\b(?:must|mustn'?t|should(?:n'?t)? (?:not |never |always |only |stay|keep|be)|don'?t|do not|never|always|"
    r"prefer|preferably|avoid|make sure|ensure|only use|i(?: would|'d)? (?:only )?want(?! you to)|no more than|at most|"
    r"at least|no new|required|backwards? compatible|stop \w+ing|(?:has|have) to|only (?:after|once|when|if)|not until|"
    r"(?:can ?not|cannot|can'?t|must not|mustn'?t|should not|shouldn'?t) (?:be )?(?:chang|break|brok|touch|modif)\w*)\b"
    r"|^(?:keep|no|never|always|only|don'?t|do not|avoid|stick to)\b",
    re.IGNORECASE,
)
# Pasted material: JSON lines, stack frames, carets, shell prompts, `key: value` dumps.
_PASTE_LINE = re.compile(r"^\s*(?:[│┃┌└├┐┘┤─═║╭╰╮╯].*|[{\[].*[}\]],?|at \S.*|node:\S.*|Node\.js v\S+|\^+|\S+@\S+ \S+|➜.*|~/\S.*|\w+: '.*',?|"
                         r"\w+: -?\d+,?|[}\]],?|\$ .*|>.*)\s*$")
# An error line quoted by the user (kept verbatim as evidence).
_QUOTED_ERROR = re.compile(r"(?:^|\s)(?:[A-Z]\w*)?(?:Error|Exception)\b\s*:|\berror(?:\[\w+\])?:|\berror TS\d+")
# Politeness and agreement that open a reply without saying anything.
_FILLER = re.compile(
    r"^(?:you're (?:absolutely )?right|right|good (?:catch|point|idea)|got it|understood|yes|ok(?:ay)?|sure|great|done|"
    r"i apologi[sz]e|(?:i'm )?sorry|my (?:apologies|mistake|bad)|"
    r"excellent|perfect|thanks|i see|makes sense|that makes (?:more )?sense)\b[^.!:]*[.!:]?\s*",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(r"^(?:\W*(?:ok|okay|alright|so|now|then|please|also)\W+)*" + _ACTION.pattern, re.IGNORECASE)
# A task stated as a wish or a need rather than an imperative: "I'd like to move it to X", "we need to ...".
_TASK_STATEMENT = re.compile(r"\b(?:i'?d like (?:you )?to|i would like (?:you )?to|i want (?:you )?to|we need to|"
                             r"i need (?:you )?to|let'?s|could you|can you|would you|please)\s+" + _ACTION.pattern,
                             re.IGNORECASE)
_RULE_START = re.compile(
    r"^(?:\W*(?:ok|okay|please|also|and)\W+)*(?:keep|no|never|always|only|don'?t|do not|avoid|stick to|make sure|"
    r"ensure|be (?:\w+ly )?(?!done|finished|back|able|there|here)\w+)\b", re.IGNORECASE)
_CONTINUE = re.compile(r"^(?:continue|go on|keep going|carry on|proceed)\b", re.IGNORECASE)
_APPROVAL = re.compile(r"^(?:yes|yeah|yep|go ahead|proceed|go on|do it|please do|sounds good|lgtm|looks good)\b[^.!?]{0,20}[.!]",
                       re.IGNORECASE)
# A question by its first word, with or without its question mark: "why does it ...", "how come ...".
_WH_OPENER = re.compile(r"^(?:\W*(?:ok|okay|so|but|and|hm+|wait)\W+)*(?:why|how come|how|what|where|when|which|who)\s+"
                        r"(?:do|does|did|is|are|was|were|would|will|can|could|should|have|has)\b", re.IGNORECASE)
_ASIDE = re.compile(r"^(?:ignore (?:that|this|it)|never ?mind|nvm|lol|haha)\b", re.IGNORECASE)
# The reason a speaker gives for a choice or a refusal.
REASON = re.compile(r"\s*(?:[,;—–-]+\s*as|(?:[,;—–-]+\s*|\s)(?:because|since|so that|otherwise|which would|it would|"
                    r"that would|it'd|we need|it needs))\s+", re.IGNORECASE)  # "as" gives a reason only after a comma


# A unified diff pasted into a message: its header starts it; hunk lines (+, -, space, @@) continue it.
_DIFF_START = re.compile(r"(?:^|\s)(?:diff --git \S|--- a/\S|\+\+\+ b/\S)|^@@ -\d")
_DIFF_LINE = re.compile(r"^(?:[+\- \t\\]|@@ |index [0-9a-f]|diff --git |(?:new|deleted) file mode|similarity index|rename (?:from|to) )")
# `key:<TAB>value` lines: a tool's status output pasted in.
_TAB_DUMP = re.compile(r"^[^\t]*:\t")


def clean_user_text(text: str) -> tuple[str, list[str]]:
    """(text without pasted material, error lines quoted in it)."""
    errors: list[str] = []
    lines = text.splitlines()
    kept: list[str] = []
    in_fence = in_diff = False
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        in_diff = (in_diff and bool(_DIFF_LINE.match(lines[i]))) or (not in_fence and bool(_DIFF_START.search(lines[i])))
        if in_diff or (not in_fence and _TAB_DUMP.match(lines[i])):
            i += 1
            continue
        if stripped.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and _QUOTED_ERROR.search(stripped):
            block = [stripped]
            while i + 1 < len(lines) and lines[i + 1].strip() and not re.match(r"\s*at\s", lines[i + 1]) \
                    and len(block) < 6 and not lines[i + 1].strip().startswith("```"):
                i += 1
                block.append(lines[i].strip())
            errors.append(clip(" ".join(block), MAX_ITEM))
        elif not in_fence and not _PASTE_LINE.match(lines[i]):
            kept.append(lines[i])
        i += 1
    return "\n".join(kept).strip(), errors


def _clauses(sentence: str) -> list[str]:
    return [c.strip() for c in re.split(r"[;:]\s+|,\s+(?:and\s+|then\s+)?", sentence) if c.strip()]


def _rule_like(sentence: str) -> bool:
    """A sentence that states a rule: a clause of it starts with one, or its rule word comes early."""
    if any(_RULE_START.match(c) for c in _clauses(sentence)):
        return True
    m = CONSTRAINT_RE.search(sentence)
    return bool(m) and len(sentence[: m.start()].split()) <= 5


# A polite refusal anywhere in the opening sentences of a reply: "I'd rather not ...", "let's not ...".
_POLITE_NO = re.compile(r"\b(?:i'?d rather not|i would rather not|i'?d prefer not|i'?d prefer we didn'?t|let'?s not|"
                        r"i don'?t (?:want|think we should)|please don'?t go|not (?:go|going) (?:with|the))\b", re.IGNORECASE)


def refuses(text: str) -> bool:
    """A reply that declines what was proposed, bluntly or politely (in its first three sentences)."""
    return is_negating(text) or any(_POLITE_NO.search(s) for s in sentences(text)[:3])


def is_negating(text: str) -> bool:
    """A reply that rejects or stops what came before it."""
    flat = " ".join(text.split())
    return bool(_NEGATING_OPENER.match(flat) or _NEGATING_ANYWHERE.search(flat[:200]))


def is_ack(text: str) -> bool:
    """A message that only agrees, thanks, or says a word or two: nothing to keep in the user's words."""
    flat = " ".join(text.split())
    return not flat or bool(_ACK.match(flat) or _ASIDE.match(flat)) or len(flat.split()) <= 2


def classify_user(text: str) -> str:
    """task | rule | correction | direction | question | look | ack."""
    flat = " ".join(text.split())
    words = len(flat.split())
    if not flat or _ACK.match(flat) or _ASIDE.match(flat) or (
            words <= 3 and not re.search(r"[/`.@]\w", flat) and not (words >= 2 and _IMPERATIVE.match(flat))):
        return "ack"
    if is_negating(flat) and not (_RULE_START.match(flat) and not re.match(r"^no\W", flat, re.I)):
        return "correction"
    if _DIRECTION.search(flat):
        return "direction"
    parts = sentences(text) or [flat]
    imperative = any(_IMPERATIVE.match(c) and not _RULE_START.match(c) for p in parts for c in _clauses(p))
    imperative = imperative or bool(_TASK_STATEMENT.search(flat))
    asks = parts[0].endswith("?") or (_WH_OPENER.match(parts[0]) and len(parts) == 1)  # "?" is often left off
    if asks and not _REQUEST_QUESTION.match(parts[0]) and not imperative:
        return "question"
    if not imperative and any(_rule_like(p) for p in parts):
        return "rule"
    if _LOOK.match(flat) and words <= 25 and not imperative:
        return "look"
    if words <= 6 and not imperative and not re.search(r"[/`@]\w|\w\.\w", flat):
        return "ack"  # a short reply to the assistant ("yes, fully clean")
    if _CONTINUE.match(flat) or (_APPROVAL.match(flat) and not any(_IMPERATIVE.match(p) for p in parts[1:])):
        return "ack"  # more of the same task, not a new one (what a go-ahead asks along with it: `conditions`)
    if _ACTION.search(flat) or words >= 8:
        return "task"
    return "question" if "?" in flat else "ack"


# First-person statements of what the user sees, knows or thinks: "I don't see", "I don't recall".
_PERCEIVING = re.compile(r"^(?:\W*\w+\W+){0,3}?i (?:also |just |really )?(?:don'?t|do not|didn'?t) (?:see|understand|recall|"
                         r"remember|know|think|get|feel|believe|mind|care)\b", re.IGNORECASE)
# The same anywhere in a sentence, and worries: what the user perceives or fears is not a rule of theirs.
_PERCEPTION = re.compile(r"\bi (?:also |just |really )?(?:don'?t|do not|didn'?t) (?:see|understand|recall|remember|know|think|"
                         r"get|feel|believe|mind|care)\b[^,;.]*|\bi(?:'m| am) (?:\w+ )?(?:worried|afraid|concerned|not sure|"
                         r"wondering)\b.*", re.IGNORECASE)


def constraint_sentences(text: str, *, skip_first: bool = False, instructions: bool = False) -> list[str]:
    """The user's rules in a message; the opening ask of a task (an imperative) is not a rule, nor
    is what the user says they do not see or recall. With `instructions`, the imperatives after the
    opening ask are rules too (how to do it, what to include), each with the verbless fragments that
    continue it ("Include the reasons. The trade-offs. And examples.")."""
    out = []
    raw = sentences(text)
    said = [LIST_MARK.sub("", s).strip() for s in raw]
    asked = False  # the first imperative is the ask itself (after a lead-in like "Do this:")
    n = 0
    while n < len(said):
        s = said[n]
        n += 1
        if n == 1 and (skip_first or _IMPERATIVE.match(s)):
            asked = True
            continue
        if "instead" in s.lower() or _PERCEIVING.match(s):
            continue
        if len(s.split()) < 3 or len(s) > 300 or s.endswith("?") or s.endswith(":"):
            continue
        rest = _PERCEPTION.sub("", s)  # a rule word inside "I don't think ..." rules nothing
        rule = CONSTRAINT_RE.search(rest) or any(_RULE_START.match(c) for c in _clauses(rest)) or (
            _PREFERENCE.search(rest) and _PREFERS.match(rest))
        if instructions and _INSTRUCTION.match(s) and not asked and not skip_first:
            asked = True
            if not rule:
                continue
        if instructions and _INSTRUCTION.match(s) and not _SEQUENCE.match(s):
            while n < len(said) and _fragment(said[n]) and not LIST_MARK.match(raw[n]):
                s, n = f"{s} {said[n]}", n + 1
            out.append(clip(s, 400))
        elif rule:
            out.append(s)
    return out


# Verbs of instructions about the deliverable, beyond the verbs of work (_ACTION).
_TELL = (r"suggest|explain|include|describe|format|list|show|give|provide|prepare|verify|confirm|mention|note|focus|"
         r"reference|compare|summari[sz]e|report|wait|leave|stop|treat|name|label|mark|group|sort|order|structure|"
         r"highlight|quote|cite|link|ask|answer|respond|reply")
# An imperative, also after an opening phrase: "In addition to the review, suggest ...", "When done, run ...".
_INSTRUCTION = re.compile(
    r"^(?:\W*(?:ok|okay|so|now|then|please|also|and|finally|lastly|first|next)\W+)*"
    r"(?:(?:in addition(?: to)?|when|once|if|after|before|for|while|in|on|with|during|where)\b[^,]{0,100},\s+)?"
    r"(?:please\s+)?(?:" + _ACTION.pattern[5:-3] + "|" + _TELL + r")\b", re.IGNORECASE)
# A step put in sequence ("Start by ...", "Then commit", "After that, ..."): part of the task, not a rule.
_SEQUENCE = re.compile(r"^(?:\W*(?:ok|okay|so|now|and|please)\W+)*(?:start|begin|first|then|next|after (?:that|this)|"
                       r"afterwards|once (?:that|this|done)|lastly)\b", re.IGNORECASE)
_AUX = re.compile(r"\b(?:is|are|was|were|be|been|has|have|had|do|does|did|can|could|will|would|should|must|may|might|"
                  r"shall)\b|^(?:i|we|you|it|this|that|they|he|she|there|here)\b", re.IGNORECASE)


def _fragment(sentence: str) -> bool:
    """A verbless piece that continues the sentence before it: "The trade-offs.", "And an example."."""
    if sentence.endswith((":", "?")):
        return False
    if re.match(r"^(?:and|or|plus|as well as)\b", sentence, re.IGNORECASE):
        return True
    return (len(sentence.split()) <= 12 and not _AUX.search(sentence) and not _INSTRUCTION.match(sentence)
            and not _SEQUENCE.match(sentence) and not re.search(r"\b(?:i|we|you|they|he|she|it)\b", sentence, re.I))


# A preference stated by contrast ("X, not Y", "X rather than Y", "better to X than Y"), by the speaker
# about what they (or their team) do: "We review for design, not style", "Better to skip it than ...".
_PREFERENCE = re.compile(r",\s*not\s+(?:on|in|for|to|by|as|with|at|a|an|the|just|only)\b|\brather than\b"
                         r"|\bbetter\b.{0,60}\bthan\b", re.IGNORECASE)
_PREFERS = re.compile(r"^(?:\W*(?:also|and|so|but)\W+)?(?:we|i|our|my|let'?s|(?:it'?s |it is )?better|prefer)\b", re.I)


def example_rules(text: str) -> list[str]:
    """Rules that introduce an example or a literal block ("Format it like this:", "end with this exact
    line:") followed by a fenced block: the lead-in with the block's first lines, which say what is meant."""
    out: list[str] = []
    paragraph: list[str] = []  # the paragraph before the line (a blank line may separate it from a fence)
    lines = text.splitlines()
    blank = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("```"):
            if stripped:
                paragraph, blank = ([] if blank else paragraph) + [stripped], False
            else:
                blank = True
            continue
        lead = next(iter(sentences(" ".join(paragraph))[-1:]), "")
        paragraph, blank = [], False
        ruling = _INSTRUCTION.match(lead) or CONSTRAINT_RE.search(lead) or _rule_like(lead)
        if not lead.endswith(":") or len(lead.split()) < 4 or not ruling:
            continue
        block = []
        for body in lines[i + 1:]:
            if body.strip().startswith("```") or len(block) == 3:
                break
            if body.strip():
                block.append(body.strip())
        if block:
            out.append(clip(f"{lead} “{' / '.join(block)}”", 400))
    return out


# Work the user puts off until something else has happened: "Once this is merged, we need to add X".
_LATER = re.compile(r"^(?:\W*\w+:\s*)?(?:once|after|when)(?: [^,\s]+){3,20}, (?:we|you|I)(?:'ll| will)? (?:still )?"
                    r"(?:need to|should|must|have to|want to)\b|^(?:later|afterwards|as a follow-?up|in a "
                    r"follow-?up)\b,? (?:we|you)\b", re.IGNORECASE)


def follow_ups(text: str) -> list[str]:
    """The user's sentences that put work off until later (a follow-up, not part of the current task)."""
    return [clip(s, 300) for s in (LIST_MARK.sub("", x).strip() for x in sentences(text))
            if _LATER.match(s) and not s.endswith("?")]


# The user taking a piece of work on themselves: "I'll fix it on my own", "I will write the docs myself".
_MINE = re.compile(r"\bI(?:'ll| will|'m going to| am going to) ((?:[\w'/.-]+ ){0,10}?[\w'/.-]+),? (?:myself|by myself|"
                   r"on my own|personally)\b", re.IGNORECASE)


def users_own(text: str) -> list[str]:
    """What the user says they will do themselves ("fix it" of "I'll fix it on my own")."""
    return [clip(m.group(1), 160) for m in _MINE.finditer(" ".join(text.split()))]


# A go-ahead that opens a reply: "ok, proceed", "yes, but ...".
_GO_AHEAD = re.compile(r"^\W*(?:y|yes|yeah|yep|ok|okay|sure|sounds good|go ahead|proceed|continue|go on|do it|please do|"
                       r"lgtm|looks good|perfect|great)\b[\s,.!:;—-]*(?:(?:but|and|just|also|though)\b\s*)?", re.IGNORECASE)


def conditions(text: str) -> list[str]:
    """What a go-ahead attaches to the work it approves ("proceed. Could you batch the questions at
    the start?", "yes, but keep the old endpoint"): its requests and rules after the opener."""
    flat = " ".join(text.split())
    m = _GO_AHEAD.match(flat)
    if not m:
        return []
    out = []
    for s in sentences(flat[m.end():]):
        request = s.endswith("?") and _REQUEST_QUESTION.match(s)
        if len(s.split()) >= 3 and (request or _INSTRUCTION.match(s) or _rule_like(s)):
            out.append(clip(s, 300))
    return out


def correction_rules(text: str) -> list[str]:
    """The rules a correction gives: its opening sentence when, past the negation, it says what to do
    instead ("no, use the queue instead"), and the rule sentences after it."""
    found = constraint_sentences(text, skip_first=True)
    first = next(iter(sentences(text)), "")
    rest = re.sub(r"^(?:no|nope|nah|wait|actually|hold on|stop|not like that)\W+", "", first, flags=re.I)
    if rest != first and len(rest.split()) >= 3 and len(first) <= 240 and not first.endswith("?") and (
            _IMPERATIVE.match(rest) or re.search(r"\b(?:instead|rather)\b", rest, re.I)):
        found.insert(0, first)
    return found


def task_rules(text: str, *, instructions: bool = True) -> list[str]:
    """The rules a task message states: its rule sentences, its imperatives after the opening ask (unless
    `instructions` is off: a skill's text is imperative throughout), and its instructions given as lists
    (whose items are not repeated one by one)."""
    listed = listed_rules(text)
    items = {i for _, its in listed for i in its}
    return [s for s in constraint_sentences(text, instructions=instructions) if s not in items] + [
        clip(f"{lead} {'; '.join(its)}", 300) for lead, its in listed]


def forbidden_verbs(constraint: str) -> set[str]:
    """Stems of the actions a rule forbids ("stop committing", "don't push") — next steps must not
    propose them."""
    out = set()
    for m in re.finditer(r"\b(?:don'?t|do not|never|stop|no more|without)\s+(?:\w+ly\s+)?(\w+)", constraint, re.I):
        out.add(stem(m.group(1)))
    return out


def stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ting", "ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    return w[:5]


# The user puts a problem aside: "skip it for now", "ignore those", "don't bother with it".
_DEFER = re.compile(r"^(?:\W*(?:ok|okay|no|nah|hm+)\W+)*(?:leave|skip|ignore|forget|park) (?:that|this|it|them|those|the)\b"
                    r"|\b(?:don'?t|do not) (?:fix|bother with|worry about)\b|\bnot now\b", re.IGNORECASE)


def defers(text: str) -> bool:
    return bool(_DEFER.search(" ".join(text.split())[:200]))


def user_reason(reply: str) -> str:
    """Why the user said no: the clause after a reason word, else the reply without its opener."""
    m = REASON.search(reply)
    if m:
        return clip(reply[m.start():].lstrip(" ,;—–-"), 450)
    return clip(re.sub(r"^(?:no|nope|nah|wait|actually|hold on)\W*", "", reply.strip(), flags=re.I), 450)


# -- the assistant's prose --------------------------------------------------------------------

# A stated choice: decide/choose/go with/instead of/rather than/switch to.
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|instead of|rather than|chose|choose|chosen|going with|go with|opted|"
    r"switch(?:ed)? to|will use|I'll use|we'll use|settled on|approach is|plan is|the fix is|"
    r"I'll implement|the solution is|we should use|better approach|makes more sense|(?:it's |is )?better to|"
    r"the (?:simplest|cleanest|safest) (?:way|option|fix)|prefer\w* .{1,40} over|trade-?off)\b",
    re.IGNORECASE,
)
# An offer or plan put to the user for approval.
PROPOSAL = re.compile(
    r"\b(?:propos|suggest|plan\b|approach|option|should I|shall I|want me to|I'll|I will|we could|I'd|"
    r"the fix|here's how)", re.IGNORECASE)
# What the assistant found out: causes, problems, explanations.
_FINDING = re.compile(
    r"\b(?:(?:root )?cause (?:is|was)|the (?:problem|issue|bug|culprit|reason) (?:is|was)|turns out|found (?:that|the)|"
    r"is caused by|was caused by|comes from|because of|is due to|the leak|is leaking|never (?:gets|get|is) "
    r"(?:removed|freed|called|closed|reset)|which means|that's why|the reason|because (?:the|it|we|of|they|there|this|a|an)|"
    r"is (?:not|never) (?:covered|used|called|reached|needed|set|supported))\b",
    re.IGNORECASE,
)
# Step-by-step narration of what it is about to do: never substance.
NARRATION = re.compile(r"^(?:let me|let's|now (?:let|I)|first,? (?:let|I)|I'll now|next,? (?:let|I)|I need to|"
                       r"I'm going to|checking|looking)\b", re.I)
# The assistant says a problem is gone.
FIXED_CLAIM = re.compile(r"\b(?:fixed|resolved|now passes|now pass|passes now|works now|now works|all green|"
                         r"is gone)\b", re.IGNORECASE)
_NOT_FIXED = re.compile(r"\b(?:not|n't|still|yet to be)\b[^.]{0,20}\b(?:fixed|resolved|pass)", re.IGNORECASE)


# The agent says the work is finished, in the first person and the perfect tense ("I've written the
# report", "All done", "The port is complete"), while it still runs a last check.
_DONE_CLAIM = re.compile(r"^(?:(?:ok(?:ay)?|great|good|perfect|so)\W+)*"
                         r"(?:(?:i|we)(?:['’]ve| have) (?:now )?(?:finished|completed|written|implemented|ported|drafted)\b"
                         r"|all done\b|done[.!]"
                         r"|(?:that|this|it|the [\w -]{1,40}) (?:is|are) (?:now )?(?:complete|done|finished)\b)", re.IGNORECASE)


# What an agent does after saying it is finished, when it is only making sure: verify, check, run, test.
_CHECKING = re.compile(r"\b(?:verify|check|confirm|make sure|ensure|run|test|review|validate|look over)\b", re.IGNORECASE)


def only_checking(text: str) -> bool:
    """Every next action the message announces (none counts) is a check of the work, not more of it."""
    return all(_CHECKING.search(s) for s in intentions(text))


def done_claim(text: str) -> str:
    """The sentence of an assistant message that says the work is finished ('' when none does)."""
    return next((clip(s, 200) for s in sentences(text) if _DONE_CLAIM.match(s) and not _NOT_FIXED.search(s)), "")


# The agent turns to another way of doing what just failed: "let me use find instead", "I'll try X instead".
WORKAROUND = re.compile(r"\b(?:use|try|using|trying|switch to|fall back to)\b[^.]{0,60}\binstead\b", re.IGNORECASE)


# Notes about the agent's own tool use ("the sed didn't match"): process, not findings about the work.
_PROCESS = re.compile(r"\b(?:sed|the command|my edit|the edit|the replacement|oldText|the regex|the grep)\b", re.I)


def prose_sentences(text: str) -> list[str]:
    """Sentences with list markers removed; mostly-code lines were already skipped by `sentences`."""
    return [LIST_MARK.sub("", s).strip() for s in sentences(text)]


# A comparison alone ("X rather than Y") describes; it is a choice when someone makes it: a first-person
# speaker, or an instruction.
_COMPARISON_ONLY = re.compile(r"\b(?:instead of|rather than|makes more sense|(?:it's |is )?better to|trade-?off)\b", re.I)
_AGENT = re.compile(r"\b(?:I|I'm|I'll|I've|I'd|we|we'll|we're|we've|let's|our|my)\b|^(?:use|keep|switch|go|pick|prefer)\b",
                    re.IGNORECASE)


# What the agent is about to do, with what it leaves out on purpose: "I'll delete the generated files
# (not the fixtures)", "Let me update every caller except the tests".
_EXCEPT = re.compile(r"\((?:but )?not\b|\((?:except|excluding|keeping|leaving)\b|,\s*(?:but )?not (?:the|a|an|any|its|their)\b"
                     r"|\bexcept (?:for )?(?:the|a|an|its|their)\b", re.IGNORECASE)


_NARRATED_CHOICE = re.compile(r"\b(?:go with|going with|settle on|opt for|stick with|chose|decided)\b", re.IGNORECASE)


def decision_sentences(text: str) -> list[str]:
    out = []
    for s in prose_sentences(text):
        if NARRATION.match(s) and _EXCEPT.search(s) and not s.endswith("?") and len(s) >= 25:
            out.append(s.rstrip(":"))  # an intention that says what it leaves out is a choice of scope
            continue
        m = _DECISION.search(s)
        narrated = NARRATION.match(s) and not _NARRATED_CHOICE.search(s)  # "Let's go with X" still chooses
        if not m or narrated or s.endswith((":", "?")) or len(s) < 25:
            continue
        only_compares = all(_COMPARISON_ONLY.fullmatch(x.group(0)) for x in _DECISION.finditer(s))
        if only_compares and not _AGENT.search(s):
            continue  # a description of how things are, not a choice
        out.append(s + _not_chosen(text, s))
    return out


# A choice announced after a list of options: "I'm going with the second", "I'll use X".
_CHOOSES = re.compile(r"\b(?:going with|go with|I'll use|we'll use|I'll take|chose|choose|choosing|opt(?:ed|ing)? for|"
                      r"picking|settled on|decided)\b", re.IGNORECASE)


def _not_chosen(text: str, sentence: str) -> str:
    """When the message lists options (list items after a lead-in ending in ':') and the sentence picks
    one of them, the options not taken with what the message says against them."""
    if not _CHOOSES.search(sentence):
        return ""
    options: list[str] = []
    before = ""  # the last line of prose before the list
    for ln in unfenced_lines(text):
        if LIST_MARK.match(ln) and (options or before.endswith(":")):
            options.append(LIST_MARK.sub("", ln).strip())
        elif options and ln:
            break
        elif ln:
            before = ln
    if len(options) < 2:
        return ""

    def words(t: str) -> set[str]:
        return {w.lower() for w in re.findall(r"[A-Za-z_]{4,}", t)}

    said = words(sentence)
    overlap = [len(words(o) & said) for o in options]
    best = max(overlap)
    if not best or overlap.count(best) > 1:
        return ""
    others = [clip(o, 200) for o, n in zip(options, overlap, strict=True) if n < best]
    return " (not chosen: " + "; ".join(others[:3]) + ")"


# The user settling how something is done, inside a task: "use the queue rather than a thread", "let's go
# with Postgres", "switch the client to httpx".
_USER_CHOICE = re.compile(r"\b(?:instead of|rather than|(?:let'?s|we'?ll|i'?ll) (?:go with|use|stick with|keep)|go with|"
                          r"switch(?:ing)? (?:\w+ )?to|stick with|settle on|opt for)\b", re.IGNORECASE)


def user_choices(text: str) -> list[str]:
    """The sentences of a user's task message that settle how it is done (a decision of the user's); the
    opening one states the task (it is the Goal)."""
    return [clip(s, 300) for s in prose_sentences(text)[1:]
            if _USER_CHOICE.search(s) and not s.endswith("?") and len(s.split()) >= 4]


def finding_sentences(text: str) -> list[str]:
    return [s for s in prose_sentences(text)
            if _FINDING.search(s) and not NARRATION.match(s) and not s.endswith(("?", ":")) and 25 <= len(s) <= 400
            and not _PROCESS.search(s)]


def claims_fixed(sentence: str) -> bool:
    return bool(FIXED_CLAIM.search(sentence)) and not _NOT_FIXED.search(sentence)


def substance(text: str) -> str:
    """The content of a reply: filler, narration and lead-ins dropped, list items joined."""
    parts = []
    prose = set(sentences(text))
    for line in text.splitlines():
        if line.strip() and not any(p in line for p in prose):
            continue  # code, not words
        line = LIST_MARK.sub("", line.strip()).strip()
        if not line or line.startswith("```") or line.startswith("#"):
            continue
        while True:
            shorter = _FILLER.sub("", line, count=1)
            if shorter == line:
                break
            line = shorter
        if line.endswith(":") and len(line.split()) <= 6:
            continue  # a lead-in to the list that follows
        line = re.sub(r"^(?:wait|hmm+|oh|ah|okay|ok)\b[,.!]?\s*", "", line, flags=re.I)
        if line and not NARRATION.match(line):
            parts.append(line.rstrip(":"))
    return clip("; ".join(parts), MAX_ITEM)


def recap_items(text: str, limit: int = 6) -> list[str]:
    """An end-of-turn message's points, in order: its headline, list items and statements
    (narration, questions, lead-ins, tables and politeness dropped). A message that ends by asking
    the user lists options, not results: its list items are left out."""
    items: list[str] = []
    all_sentences = sentences(text)
    asks = bool(all_sentences) and all_sentences[-1].endswith("?")
    for s in unfenced_lines(text):
        if not s or s.startswith(("|", "#")):
            continue
        if LIST_MARK.match(s):
            item = unbold(LIST_MARK.sub("", s))
            if len(item) >= 12 and not NARRATION.match(item) and not asks and _wordy(item):
                items.append(clip(item, 300))
            continue
        for sent in sentences(s):
            sent = _FILLER.sub("", sent).strip()
            if len(sent) >= 25 and not NARRATION.match(sent) and not sent.endswith(("?", ":")):
                items.append(clip(sent, 300))
    return items[:limit]


def unbold(item: str) -> str:
    """A list item without its emphasis: "**Name** - what it does" -> "Name - what it does" (stripping
    the stars at both ends alone left the closing pair inside the item)."""
    return re.sub(r"\*\*(.+?)\*\*", r"\1", item.strip()).strip().strip("*")


def _wordy(item: str) -> bool:
    """A point with words in it, not a value or a code mapping (three words outside code spans)."""
    return len(re.findall(r"[A-Za-z]{2,}", re.sub(r"`[^`]*`", "", item))) >= 3


def plan_items(text: str) -> list[str]:
    """The numbered steps of a plan in an assistant message."""
    return [clip(unbold(re.sub(r"^\s*\d+[.)]\s+", "", ln)), 200)
            for ln in text.splitlines() if re.match(r"^\s*\d+[.)]\s+\S", ln)]


# A numbered heading of a plan: "## 1. Add the client", "### Task 2: Backfill", "## Phase 3 — Cut over".
_STEP_HEADING = re.compile(r"^#{1,6}\s+(?:\w+\s+)?\d+\b[.:)]?\s*\S")
_NUMBERED = re.compile(r"^\d+[.)]\s")


def plan_steps(plan: str, limit: int = 8) -> list[str]:
    """The steps of a plan written as Markdown. Order is what marks steps: numbered headings (each one a
    step, with its details below it), else numbered items, else any list items, else its sentences.
    Bullets beside numbered steps are details, files or caveats."""
    lines = [re.sub(r"^(?:>\s?)+", "", ln).strip() for ln in unfenced_lines(plan)]  # quoted blocks too
    headed: list[list[str]] = []  # each numbered heading, with the first line of text under it
    under = False
    for ln in lines:
        if ln.startswith("#"):
            under = bool(_STEP_HEADING.match(ln))
            if under:
                headed.append([ln.lstrip("#").replace("**", "").strip()])
        elif under and len(headed[-1]) == 1 and _wordy(ln) and not ln.endswith(":"):
            headed[-1].append(LIST_MARK.sub("", ln).replace("**", "").strip())
    steps = [clip(" — ".join(h), 200) for h in headed]
    numbered = [ln for ln in lines if _NUMBERED.match(ln)]
    listed = [ln for ln in lines if LIST_MARK.match(ln)]
    items = [clip(LIST_MARK.sub("", ln).replace("**", "").strip(), 200) for ln in (numbered if len(numbered) >= 2 else listed)]
    items = [it for it in items if _wordy(it)]
    if len(steps) >= 2:
        return steps[:limit]
    return (items or [clip(s, 200) for s in sentences(plan) if not s.startswith("#")])[:limit]


def plan_rules(plan: str) -> list[str]:
    """The items of a plan that bound the work rather than step through it ("No migration in this
    change", "Keep the old endpoint"): what the user accepts along with the plan."""
    lines = [re.sub(r"^(?:>\s?)+", "", ln).strip() for ln in unfenced_lines(plan)]
    items = [LIST_MARK.sub("", ln).replace("**", "").strip() for ln in lines if LIST_MARK.match(ln)]
    return [clip(it, 160) for it in items if len(it.split()) >= 3 and (_RULE_START.match(it) or CONSTRAINT_RE.search(it))]


def plan_title(plan: str) -> str:
    """A plan's first heading, else its first sentence."""
    title = next((ln.lstrip("#").strip() for ln in unfenced_lines(plan) if ln.startswith("#")), "")
    return clip(title or next(iter(sentences(plan)), ""), 160)


_ANSWER = re.compile(r'"([^"\n]{3,400}?)"\s*=\s*"([^"\n]{1,400}?)"')


def answers(result: str) -> list[tuple[str, str]]:
    """(question, answer) pairs of a result that reports the user's answers as "question"="answer"."""
    return _ANSWER.findall(result)


def plan_text(plan: str) -> str:
    """A plan in one line: its title and first steps."""
    title = next((ln.lstrip("#").strip() for ln in unfenced_lines(plan) if ln.startswith("#")), "")
    steps = plan_steps(plan, 3)
    return clip("; ".join(([f"plan “{title}”"] if title else []) + steps), 300)


# Sentences of a long message worth keeping: rules, reasons, requests, questions, decisions.
_KEEP = re.compile(r"^be\b|\b(?:because|since|so that|otherwise|instead|rather|reason|why|want|need|should|must|"
                   r"please|pls|make|keep|use|don'?t|never|always|only|not|no)\b|\?", re.IGNORECASE)


# A line that maps one thing to another ("tools -> core/tools", "old_name → new_name"): what the user
# wants moved, renamed or replaced, written as an arrow.
_MAPPING = re.compile(r"\S\s*(?:->|→|=>)\s*\S")


# Greetings, thanks and praise: the polite frame of a message, not what it asks (thanks inside a quote are
# words the user dictates, not politeness).
_POLITE = re.compile(r"^(?:(?:good (?:morning|afternoon|evening)|hi|hello|hey|wonderful|great|perfect|nice|awesome|excellent|"
                     r"cool|brilliant|lovely|amazing)\b[^.?]{0,40}[.!]"
                     r"|[^\"“'`]{0,60}\b(?:thanks?|thank you|appreciated?)\b[^.?]{0,60}[.!]?)$",
                     re.IGNORECASE)


def polite(sentence: str) -> bool:
    return bool(_POLITE.match(sentence.strip()))


def unwrapped(text: str) -> str:
    """Hard-wrapped prose joined back into paragraphs (list items, fences and blank lines kept)."""
    out: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        prev = out[-1] if out else ""
        if (s and prev.strip() and not LIST_MARK.match(line) and not s.startswith(("```", "#", "|"))
                and not _MAPPING.search(s) and not _MAPPING.search(prev)  # "a -> b" lines are one item each
                and not prev.strip().startswith(("```", "|")) and not prev.rstrip().endswith((":", "```"))):
            out[-1] = prev.rstrip() + " " + s
        else:
            out.append(line)
    return "\n".join(out)


def condense(text: str, limit: int = 240) -> str:
    """A user message in at most `limit` characters, in the user's words: short ones whole; long ones
    cut to their opening sentence and the sentences that ask, rule or give a reason."""
    parts = [LIST_MARK.sub("", s).strip() for s in sentences(text)]
    parts = [p for p in parts if p and not polite(p)]
    if not parts:
        return ""
    whole = " ".join(parts)
    if len(whole) <= limit:
        return whole
    items = {LIST_MARK.sub("", ln).strip() for ln in unfenced_lines(text) if LIST_MARK.match(ln)}

    def weight(p: str) -> int:  # rules first, then asks and reasons, then the rest
        if CONSTRAINT_RE.search(p) or _rule_like(p):
            return 2
        return 1 if _KEEP.search(p) or _IMPERATIVE.match(p) or p in items or _MAPPING.search(p) else 0

    chosen = {0}
    used = len(parts[0])
    for i in sorted(range(1, len(parts)), key=lambda i: (-weight(parts[i]), i)):
        if weight(parts[i]) == 0 or used + len(parts[i]) + 3 > limit:
            continue
        chosen.add(i)
        used += len(parts[i]) + 3
    out: list[str] = []
    last = -1
    for i in sorted(chosen):
        piece = clip(parts[i], limit) if i == 0 else parts[i]
        out.append(("… " if last >= 0 and i != last + 1 else "") + piece)
        last = i
    return " ".join(out) + (" …" if last < len(parts) - 1 else "")


# A lead-in that announces what was learned: "Key findings:", "Here's what I found:", "Current state:".
_FINDINGS_LEAD = re.compile(r"\b(?:find|found|finding|learn|learned|key|summary|result|observ|conclu|notice|status|state|"
                            r"discover)\w*\b[^:]*:\**$", re.IGNORECASE)


def listed_findings(text: str, limit: int = 6) -> list[str]:
    """The items of a list the assistant introduces as what it found or learned."""
    out: list[str] = []
    active = False
    for line in unfenced_lines(text):
        if not line:
            continue
        if LIST_MARK.match(line):
            if active:
                item = LIST_MARK.sub("", line).replace("**", "").strip()
                if _wordy(item):
                    out.append(clip(item, 240))
            continue
        active = bool(_FINDINGS_LEAD.search(line))
    return out[:limit]


# The agent announcing what it does next: "Now let me update the tests", "Next, I'll wire the route".
_INTENTION = re.compile(r"^(?:(?:now|next|then|first|finally|ok(?:ay)?|great|good|perfect)\W+)*(?:let me|let's|i'll|i will|i need to|"
                        r"we need to|i'm going to|now i)\b", re.IGNORECASE)


def intentions(text: str) -> list[str]:
    """The sentences of an assistant message that announce its next action (narration, kept here for
    what it says about the current work)."""
    return [clip(s.rstrip(":.…"), 160) for s in sentences(text)
            if _INTENTION.match(s) and len(s.split()) >= 4][-2:]


_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "last": -1, "1st": 1, "2nd": 2, "3rd": 3}
_PICK = re.compile(r"^\W*(?:(?:ok(?:ay)?,?|yes,?|let'?s|go|with|use|take|do|pick|i'?d|i|choose|prefer|for)\s+)*"
                   r"(?:(?:option|approach|choice|number|#)\s*)?(?:\(?([1-9a-d])\)?|the (\w+)(?: one| option| approach)?)"
                   r"(?:\s+(?:one|option|approach|please|pls|plz|then|sounds good))*\W*$",
                   re.IGNORECASE)
_OPTION_LINE = re.compile(r"^\s*(?:[-*]\s+)?\**(?:option\s+)?\(?([1-9a-dA-D])[.):]\**\s+(.+)$", re.IGNORECASE)


def picked_option(reply: str, proposal: str) -> str | None:
    """The option a short reply picks from the numbered or lettered options of the message before it
    ("2", "option b", "let's go with the second one")."""
    flat = " ".join(reply.split())
    if len(flat.split()) > 10:
        return None
    m = _PICK.match(flat)
    if not m:
        return None
    found = [_OPTION_LINE.match(line) for line in proposal.splitlines()]
    options = [(om.group(1).lower(), om.group(2).strip().strip("*")) for om in found if om]
    if len(options) < 2:
        return None
    if m.group(1):
        key = m.group(1).lower()
        return next((clip(v, 240) for k, v in options if k == key), None)
    n = _ORDINALS.get((m.group(2) or "").lower())
    if n is None:
        return None
    return clip(options[n - 1 if n > 0 else -1][1], 240) if abs(n) <= len(options) else None
