"""The language tools every text rule shares, each stated once: the words of a text, its
sentences, the German and English stopwords, and the guess whether a text is German.

Memories of one workspace mix German and English, so the rules work on both at once: the
stopwords are the union of both lists (no per-text language guess decides which list
applies), and the language guess only steers what differs between the two (German
capitalises every noun, so a capitalised word there is weaker evidence of a name).

Users: retrieval (question terms, the ``cited`` sensor; ``retrieval/terms.py`` and
``retrieval/stopwords.py`` re-export these names unchanged), the extractive maintenance model
(``dreaming/extractive.py``), the offline graph extractor (``graph/offline.py``) and the
session summaries and offline fact extraction (``sessions/``). The hashing embedding keeps
its own frozen stopword list (``embeddings/hashing.py``): it is part of that model's
identity, and its vectors would change with this one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# --- words ------------------------------------------------------------------------------------

# A word is a run of letters and digits: punctuation, white space and ``_`` separate words.
WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The words of ``text``, in order (case and spelling as given)."""
    return WORD.findall(text)


# --- stopwords --------------------------------------------------------------------------------

# Function words, auxiliaries and conversational filler: words that two texts share without
# one citing the other, and that never carry a question. Spellings are the natural ones
# (umlauts, ``ß``); a rule that folds its texts folds the lists the same way.
ENGLISH: frozenset[str] = frozenset(
    """
    a about above across after afterwards again against ago all almost along already also
    although always am among an and another any anybody anyone anything anyway anywhere are
    around as at be became because become been before being below beside besides between
    both but by can cannot could did do does doing done down during each either else
    enough etc even ever every everyone everything few for from further get gets getting
    got had has have having he hello her here hers herself hi him himself his how however
    i if in indeed instead into is it its itself just know least less let like made make
    makes many may maybe me might mine more moreover most mostly much must my myself need
    needs neither never no nobody none nor not nothing now of off often ok okay on once
    one only onto or other others otherwise our ours ourselves out over own per perhaps
    please quite rather really said same say says see shall she should since so some
    somebody someone something sometimes still such sure than thank thanks that the their
    theirs them themselves then there thereby therefore these they thing things this those
    though through thus to together too toward towards under unless until up upon us use
    used uses using usually very via want wants was way we well were what whatever when
    whenever where whereas wherever whether which while who whoever whole whom whose why
    will with within without would yeah yes yet you your yours yourself yourselves
    aren't can't couldn't didn't doesn't don't hadn't hasn't haven't he's i'd i'll i'm
    i've isn't it's let's she's shouldn't that's there's they'd they'll they're they've
    wasn't we'd we'll we're we've weren't what's won't wouldn't you'd you'll you're you've
    """.split()
)

GERMAN: frozenset[str] = frozenset(
    """
    ab aber allem allen aller allerdings alles als also am an ander andere anderem anderen
    anderer anderes auch auf aus außer außerdem bei beide beiden beim bereits bevor bin
    bis bist bitte bzw da dabei dadurch dafür dagegen daher damals damit danach danke dann
    daran darauf daraus darf darin darum darunter darüber das dass daß davon dazu dein
    deine deinem deinen deiner deines dem den denen denn dennoch der deren des deshalb
    dessen dich die dies diese diesem diesen dieser dieses dir doch dort du durch dürfen
    eben ebenfalls ebenso eigentlich ein eine einem einen einer eines einfach einige
    einigem einigen einiger einiges einmal entweder er es etwa etwas euch euer eure eurem
    euren eurer eures falls für gab ganz gar gegen gerade gewesen gibt hab habe haben habt
    hallo hast hat hatte hatten hätte hätten her heraus hier hierbei hierzu hin hinter ich
    ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres im immer indem ins ist ja je jede jedem
    jeden jeder jedes jedoch jemand jene jenem jenen jener jenes jetzt kann kannst kaum
    kein keine keinem keinen keiner keines klar können könnte könnten lassen man manche
    manchem manchen mancher manches mehr mein meine meinem meinen meiner meines mich mir
    mit möchte möchten muss musste müssen nach nachdem nein nicht nichts nie niemals noch
    nun nur ob obwohl oder ohne schon sehr sei seid seien sein seine seinem seinen seiner
    seines seit selbst sich sie sind so sodass sogar solche solchem solchen solcher
    solches soll sollen sollte sollten somit sondern sonst sowie sowohl statt trotz um und
    uns unser unsere unserem unseren unserer unseres unter usw viel viele vielleicht vom
    von vor wann war waren warst warum was weder wegen weil weiter welche welchem welchen
    welcher welches wem wen wenn wer werde werden wessen wie wieder wieso will wir wird
    wirst wo wobei wodurch wofür wohl wollen wollte worden wurde wurden während wäre wären
    würde würden zu zudem zum zur zwar zwischen über
    """.split()
)

STOPWORDS: frozenset[str] = ENGLISH | GERMAN

# The words that are never a name, however a text capitalises them (at the start of a
# sentence, in a heading): what the offline extractors (the extractive model, the offline
# graph, the summaries' anchors) skip when they look for names. Not STOPWORDS: that list
# holds words that are names too ("May", "Will") and lacks sequence cues ("First", "Zuerst")
# and greetings ("Hey") that open a sentence without naming anything.
NAME_STOPWORDS: frozenset[str] = frozenset(
    """
    a about after all also always am an and any are as at be because been before but by
    did do does each every first for from had has have he hello her here hey hi his how
    however i if in into is it its my never next no not note of ok okay on only or our
    over per please she since so some sure thanks that the their them then there
    therefore these they this those to under until us via was we were what when where
    which while who whom why with yes you your
    ab aber alle als anschließend auch auf aus außerdem bei beim bis bitte bzw daher
    danach danke dann das dass dein deine dem den der des deshalb die dies diese diesem
    diesen dieser dieses dort du durch ein eine einem einen einer eines er erst es euch
    für gegen gut haben hallo hat hier ich ihm ihn ihr im immer ins ist ja jede jeder
    jedes jetzt kein keine keinen man mein meine mit nach nein nicht nie niemals nur
    oder ohne sein seine seit sie sind sofort stets um und uns unser unsere unserem
    unseren unserer unter vom von vor wann war waren warum welche welcher welches wenn
    wer wie wir wo zu zuerst zum zunächst zur über
    """.split()
)

# --- sentences --------------------------------------------------------------------------------

_LIST_MARKER = re.compile(r"^\s*(?:[-*•+>]\s+|\d{1,3}[.)]\s+|#{1,6}\s+)")
# Possessive and anchored at the start of a punctuation run: linear on a run of '!!!!'.
_BOUNDARY = re.compile(r"(?<![.!?…])[.!?…]++[\"'»“”)\]]*+\s+(?=[\"'„“«(\[]?[A-ZÄÖÜ0-9])")
_ABBREVIATIONS = ("e.g.", "i.e.", "z.B.", "z. B.", "d.h.", "d. h.", "Dr.", "Mr.", "Mrs.",
                  "Ms.", "Prof.", "bzw.", "ca.", "vs.", "Nr.", "No.", "usw.", " z.", " d.")


def split_sentences(content: str) -> list[str]:
    """The sentences of ``content``, each an exact substring (list markers stripped): a line
    break ends a sentence, and so do ``.!?…`` before a capital or a digit, except after a
    German or English abbreviation ("z. B.", "Dr.")."""
    sentences: list[str] = []
    for line in re.finditer(r"[^\n]+", content):
        text = line.group()
        start = 0
        for boundary in _BOUNDARY.finditer(text):
            head = text[start: boundary.start() + 1]
            if head.rstrip().endswith(_ABBREVIATIONS):
                continue
            sentences.append(text[start: boundary.end()])
            start = boundary.end()
        sentences.append(text[start:])
    out = []
    for sentence in sentences:
        marker = _LIST_MARKER.match(sentence)
        if marker:
            sentence = sentence[marker.end():]
        sentence = sentence.strip()
        if sentence:
            out.append(sentence)
    return out


def cut_at_word(text: str, limit: int) -> str:
    """A prefix of ``text`` of at most ``limit`` chars ending at a word boundary (a single
    word longer than ``limit`` is cut inside)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    if not text[limit].isspace():
        space = max(head.rfind(" "), head.rfind("\t"))
        if space > 0:
            head = head[:space]
    return head.rstrip()


# --- the language guess -----------------------------------------------------------------------

# Words frequent in one language and rare in the other: articles, auxiliaries, modal verbs,
# the commonest prepositions, and the verbs statements about people use.
GERMAN_HINTS = frozenset("der die das und ist sind nicht mit wir ich für auf ein eine dass "
                         "zu im von bei hat haben wird werden auch den dem des muss müssen "
                         "soll sollen darf dürfen kann können immer nie oder zum zur am "
                         "bevorzugt bevorzugte möchte mag wünscht sagt arbeitet betreut "
                         "leitet entschied entschieden".split())
ENGLISH_HINTS = frozenset("the and is are not with we for on a an that to of in has have "
                          "will be also".split())
_UMLAUTS = frozenset("äöü")


def is_german(tokens: Iterable[str]) -> bool:
    """Whether the words ``tokens`` (of one text) are more likely German than English: more
    German hints than English ones; with neither, any umlaut (casefolded: ``ß`` is ``ss``)."""
    folded = [token.casefold() for token in tokens]
    german = sum(token in GERMAN_HINTS for token in folded)
    english = sum(token in ENGLISH_HINTS for token in folded)
    if german == english == 0:
        return any(c in _UMLAUTS for token in folded for c in token)
    return german > english
