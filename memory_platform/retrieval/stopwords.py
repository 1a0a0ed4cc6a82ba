"""German and English stopwords: dropped from a question's terms (retrieval/terms.py) and from
the texts the ``cited`` sensor compares (retrieval/feedback/citation.py).

Memories of one workspace mix both languages, so both drop the union of both lists instead
of guessing a language per text. The lists hold function words, auxiliaries and
conversational filler: words that two texts share without one citing the other. Spellings are
the natural ones (umlauts, ``ß``): a question's words are compared as written (lowercased);
the sensor folds the lists exactly like the texts it compares.
"""

from __future__ import annotations

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

ALL: frozenset[str] = ENGLISH | GERMAN
