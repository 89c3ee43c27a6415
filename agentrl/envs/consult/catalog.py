"""What a patient can be asked about, and what a doctor can order: the two fixed vocabularies.

Every fact of a case belongs to one :class:`Topic` (``"fever"``, ``"smoking"``, ``"onset"``...), and every
examination or test a doctor can request is a :class:`TestSpec` (``"chest_xray"``, ``"cbc"``...). The
simulator matches a doctor's utterance to topics (keywords first, MiniLM similarity to the topics'
prototype questions second) and discloses only the facts of the matched topics; the measurement unit
resolves a test request to a :class:`TestSpec` and answers from the case.

>>> TOPICS["fever"].category, TESTS["chest_xray"].name
('symptom', 'chest X-ray')
>>> len(TOPICS) >= 60, len(TESTS) >= 50
(True, True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CATEGORIES", "JARGON", "LAY_TERMS", "TESTS", "TOPICS", "TestSpec", "Topic", "normalize_test_name"]

#: the kinds of facts, in the order a history is taken
CATEGORIES = ("hpi", "symptom", "history", "social", "family")


@dataclass(frozen=True)
class Topic:
    """One thing a doctor can ask about.

    Attributes:
        key: the topic id, e.g. ``"shortness_of_breath"``.
        category: one of :data:`CATEGORIES`.
        label: a short human name ("shortness of breath").
        keywords: one regular expression (matched from a word boundary, on lower case) naming the topic.
        questions: prototype questions, embedded for semantic matching.
        denial: what a patient says when the topic does not apply to them (first person).
    """

    key: str
    category: str
    label: str
    keywords: str
    questions: tuple[str, ...]
    denial: str


def _t(key: str, category: str, label: str, keywords: str, questions: str, denial: str) -> Topic:
    return Topic(key, category, label, keywords, tuple(questions.split("|")), denial)


_TOPIC_LIST = [
    # history of the present illness
    _t(
        "chief_complaint",
        "hpi",
        "main complaint",
        r"brings? you|what seems to be|what is the problem|what's the problem|how can i help|what happened|main (?:problem|concern|complaint)|tell me (?:about|more about) (?:it|your symptoms|what)",
        "What brings you in today?|What seems to be the problem?|How can I help you today?",
        "I'm not sure how to describe it.",
    ),
    _t(
        "onset",
        "hpi",
        "onset",
        r"when did|how long|since when|start(?:ed)?|began|begin|come on|came on|first notice",
        "When did this start?|How long have you had this?|When did you first notice it?",
        "I can't remember exactly when it started.",
    ),
    _t(
        "character",
        "hpi",
        "character",
        r"describe|what (?:does|did) it feel|what kind of|what sort of|sharp|dull|burning|crushing|stabbing|throbbing|character",
        "Can you describe what it feels like?|What kind of pain is it?|Is it sharp or dull?",
        "It's hard to put into words.",
    ),
    _t(
        "location",
        "hpi",
        "location",
        r"where (?:is|exactly|does it hurt|do you feel)|which (?:part|side)|point to|location",
        "Where exactly is it?|Can you point to where it hurts?|Which side is it on?",
        "It's hard to say exactly where.",
    ),
    _t(
        "radiation",
        "hpi",
        "radiation",
        r"spread|radiat|go anywhere|move (?:anywhere|to)|travel to|shoot",
        "Does the pain spread anywhere?|Does it go anywhere else, like your arm or back?",
        "No, it stays in one place.",
    ),
    _t(
        "severity",
        "hpi",
        "severity",
        r"how bad|how severe|severity|scale of|out of (?:ten|10)|how much does it hurt|how strong|rate the",
        "How bad is it on a scale of one to ten?|How severe is it?",
        "It's bothering me, but I can't really rate it.",
    ),
    _t(
        "timing",
        "hpi",
        "timing",
        r"constant|comes? and goes?|all the time|how often|time of day|pattern|intermittent|episodes|getting (?:better|worse)|changed over",
        "Is it there all the time or does it come and go?|Has it been getting better or worse?",
        "It's been about the same.",
    ),
    _t(
        "aggravating",
        "hpi",
        "aggravating factors",
        r"makes? (?:it|the pain|things) worse|worse (?:when|if|with|after)|aggravat|trigger|brings? it on|anything (?:that )?(?:makes|made) it worse",
        "Does anything make it worse?|What brings it on?",
        "Nothing in particular seems to make it worse.",
    ),
    _t(
        "relieving",
        "hpi",
        "relieving factors",
        r"makes? (?:it|the pain|things) better|better (?:when|if|with|after)|reliev|eases?\b|anything (?:that )?helps|help(?:s|ed)? (?:it|the pain)|tried anything|taken anything for",
        "Does anything make it better?|Have you tried anything for it?",
        "Nothing I've tried has made much difference.",
    ),
    _t(
        "prior_episodes",
        "hpi",
        "previous episodes",
        r"happened (?:to you )?before|(?:had|felt) (?:this|anything like this|it) before|first time|previous (?:episodes?|attacks?)|similar episodes?|ever had (?:this|anything like)",
        "Has this ever happened before?|Is this the first time you've had this?",
        "No, this is the first time.",
    ),
    # symptoms (review of systems)
    _t(
        "fever",
        "symptom",
        "fever",
        r"fevers?|temperature|feverish|chills|shiver|rigou?rs|hot and cold",
        "Have you had a fever?|Have you been feeling hot or shivery?",
        "No, I haven't had a fever.",
    ),
    _t(
        "cough",
        "symptom",
        "cough",
        r"cough(?:ing)?",
        "Have you been coughing?|Do you have a cough?",
        "No, I haven't been coughing.",
    ),
    _t(
        "sputum",
        "symptom",
        "sputum",
        r"(?:when you cough\w*,? )?(?:does|do|is) (?:anything|something|it) (?:come|bring\w*) up|phlegm|sputum|mucus|bring (?:anything|something) up|productive",
        "Are you bringing up any phlegm?|What colour is the phlegm?",
        "No, I'm not bringing anything up.",
    ),
    _t(
        "hemoptysis",
        "symptom",
        "coughing blood",
        r"cough\w* (?:up )?(?:any )?blood|blood in (?:your|the) (?:phlegm|sputum)|blood when you cough|haemoptysis|hemoptysis",
        "Have you coughed up any blood?",
        "No, no blood when I cough.",
    ),
    _t(
        "shortness_of_breath",
        "symptom",
        "shortness of breath",
        r"short(?:ness)? of breath|breathless|out of breath|(?:trouble|difficulty|problems?|hard|struggl\w*) (?:with )?(?:your )?breath\w*|(?:your|the) breathing|breathing (?:problems?|difficult\w*)|catch your breath|dyspn(?:o)?ea|winded",
        "Are you short of breath?|Any trouble breathing?",
        "No, my breathing is fine.",
    ),
    _t(
        "wheezing",
        "symptom",
        "wheezing",
        r"(?:wheez|whistl)\w*(?:[^.?!]{0,30}breathe? (?:out|in))?",
        "Have you noticed any wheezing?",
        "No, no wheezing.",
    ),
    _t(
        "chest_pain",
        "symptom",
        "chest pain",
        r"chest|angina",
        "Do you have any chest pain?|Any pain or tightness in your chest?",
        "No, I don't have any chest pain.",
    ),
    _t(
        "palpitations",
        "symptom",
        "palpitations",
        r"palpitat|heart (?:racing|pounding|fluttering|skipping)|racing heart|heartbeat|heart beat",
        "Have you felt your heart racing or pounding?|Any palpitations?",
        "No, my heartbeat feels normal.",
    ),
    _t(
        "syncope",
        "symptom",
        "fainting",
        r"faint|pass(?:ed)? out|black(?:ed)? out|lost consciousness|collapse|syncope",
        "Have you fainted or passed out?",
        "No, I haven't fainted.",
    ),
    _t(
        "leg_swelling",
        "symptom",
        "leg swelling",
        r"(?:legs?|ankles?|feet|calf|calves)\b[^.?!]{0,25}(?:swell|swollen|puff)|(?:swell|swollen|puff)[^.?!]{0,25}(?:legs?|ankles?|feet|calf|calves)|oedema|edema",
        "Have your legs or ankles been swollen?|Any swelling in your calf?",
        "No, my legs aren't swollen.",
    ),
    _t(
        "orthopnea",
        "symptom",
        "breathless lying flat",
        r"(?:breathless|short of breath|out of breath) (?:when|if) you (?:lie|are lying)(?: down| flat)?|lying (?:down|flat)|lie (?:down|flat)|pillows|wake (?:up )?(?:at night )?(?:gasping|breathless)|orthopn",
        "Are you more breathless when you lie flat?|How many pillows do you sleep on?",
        "No, lying down doesn't make a difference.",
    ),
    _t(
        "nausea",
        "symptom",
        "nausea",
        r"nause|(?:feel(?:ing)? )?sick to your stomach|queasy|feel(?:ing)? sick",
        "Have you felt nauseous?|Do you feel sick to your stomach?",
        "No, I haven't felt sick.",
    ),
    _t(
        "vomiting",
        "symptom",
        "vomiting",
        r"vomit|throw(?:n|ing)? up|threw up|being sick",
        "Have you vomited?|Have you been throwing up?",
        "No, I haven't vomited.",
    ),
    _t(
        "diarrhea",
        "symptom",
        "diarrhoea",
        r"diarrh|loose (?:stools?|bowels?)|runny (?:stools?|poo)|watery stools?",
        "Have you had diarrhoea?|Any loose stools?",
        "No diarrhoea.",
    ),
    _t(
        "constipation",
        "symptom",
        "constipation",
        r"constipat|bowels?\b|bowel habits?|opened your bowels",
        "Have you been constipated?|Are your bowels moving normally?",
        "No, my bowels are normal.",
    ),
    _t(
        "abdominal_pain",
        "symptom",
        "abdominal pain",
        r"abdom|stomach|belly|tummy",
        "Do you have any stomach pain?|Any pain in your belly?",
        "No, my stomach is fine.",
    ),
    _t(
        "blood_in_stool",
        "symptom",
        "blood in stool",
        r"blood in (?:your|the) (?:stools?|poo)|bloody stools?|black stools?|(?:stools?|poo) (?:\w+ )?(?:black|bloody|red)|tarry|rectal bleeding|bleeding from (?:your|the) (?:back passage|bottom)|melaena|melena",
        "Have you seen any blood in your stool?|Are your stools black?",
        "No, I haven't seen any blood in my stool.",
    ),
    _t(
        "heartburn",
        "symptom",
        "heartburn",
        r"heartburn|indigestion|acid|reflux|burning (?:in|behind) (?:your|the) (?:chest|breastbone)",
        "Do you get heartburn or indigestion?",
        "No, I don't get heartburn.",
    ),
    _t(
        "dysphagia",
        "symptom",
        "difficulty swallowing",
        r"swallow",
        "Any difficulty swallowing?|Does food get stuck when you swallow?",
        "No, swallowing is fine.",
    ),
    _t(
        "appetite",
        "symptom",
        "appetite",
        r"appetite|eating (?:normally|less|more)|hungry|hunger",
        "How is your appetite?|Are you eating normally?",
        "My appetite is normal.",
    ),
    _t(
        "weight_change",
        "symptom",
        "weight change",
        r"weight|lost (?:any )?(?:weight|pounds|kilos)|gained|clothes",
        "Have you lost or gained any weight?|Have your clothes been fitting differently?",
        "No, my weight hasn't changed.",
    ),
    _t(
        "fatigue",
        "symptom",
        "tiredness",
        r"tired|fatigue|energy|exhaust|worn out|run down|lethargic",
        "Have you been feeling tired?|How are your energy levels?",
        "No, my energy is fine.",
    ),
    _t(
        "night_sweats",
        "symptom",
        "night sweats",
        r"night sweats?|sweat(?:ing|y)? at night|drenched|soak(?:ed|ing)",
        "Do you get night sweats?|Do you wake up drenched in sweat?",
        "No night sweats.",
    ),
    _t(
        "headache",
        "symptom",
        "headache",
        r"headaches?|head (?:hurt|pain|ache)|migraine",
        "Have you had any headaches?|Does your head hurt?",
        "No, I haven't had headaches.",
    ),
    _t(
        "neck_stiffness",
        "symptom",
        "neck stiffness",
        r"stiff neck|neck (?:stiff|stiffness|pain)|bend your (?:head|neck)|chin to (?:your )?chest",
        "Is your neck stiff?|Can you touch your chin to your chest?",
        "No, my neck isn't stiff.",
    ),
    _t(
        "photophobia",
        "symptom",
        "sensitivity to light",
        r"light (?:hurt|bother|sensitiv)|bright lights?|sensitive to light|photophob",
        "Does light bother your eyes?|Are you sensitive to bright light?",
        "No, light doesn't bother me.",
    ),
    _t(
        "vision_changes",
        "symptom",
        "vision changes",
        r"vision|eyesight|blurr|see(?:ing)? (?:double|spots)|double vision|visual",
        "Any changes in your vision?|Is your vision blurry?",
        "No, my eyesight is fine.",
    ),
    _t(
        "dizziness",
        "symptom",
        "dizziness",
        r"dizz|light-?headed|spin|vertigo|unsteady|off balance",
        "Have you felt dizzy?|Does the room spin?",
        "No, I haven't felt dizzy.",
    ),
    _t(
        "weakness_numbness",
        "symptom",
        "weakness or numbness",
        r"weak(?:ness)?|numb|tingl|pins and needles|can't move|cannot move|paralys",
        "Any weakness or numbness anywhere?|Any tingling in your arms or legs?",
        "No weakness or numbness.",
    ),
    _t(
        "speech_difficulty",
        "symptom",
        "speech difficulty",
        r"speech|speak(?:ing)?|talk(?:ing)? (?:properly|normally)|words out|slurr",
        "Any trouble speaking?|Has your speech been slurred?",
        "No, my speech is fine.",
    ),
    _t(
        "confusion",
        "symptom",
        "confusion",
        r"confus|disorient|memory|forgetful|not thinking (?:clearly|straight)|muddled",
        "Have you felt confused?|Any problems with your memory?",
        "No, my mind is clear.",
    ),
    _t(
        "seizures",
        "symptom",
        "seizures",
        r"seizures?|fits\b|having a fit|convuls|shaking episodes?",
        "Have you had any seizures or fits?",
        "No, never had a seizure.",
    ),
    _t(
        "urinary_symptoms",
        "symptom",
        "urinary symptoms",
        r"urin|pee(?:ing)?\b|wee(?:ing)?\b|pass(?:ing)? water|toilet more|bladder|burn(?:s|ing)? when you",
        "Any burning when you pass urine?|Are you peeing more often?",
        "No, passing water is normal.",
    ),
    _t(
        "hematuria",
        "symptom",
        "blood in urine",
        r"blood in (?:your|the) (?:urine|pee|wee)|haematuria|hematuria|urine (?:red|dark|brown)|colou?r of your urine|colou?r is your urine|urine colou?r",
        "Have you seen blood in your urine?|What colour is your urine?",
        "No, my urine looks normal.",
    ),
    _t(
        "thirst",
        "symptom",
        "thirst",
        r"thirst|drinking (?:a lot|more)|dry mouth",
        "Have you been very thirsty?|Are you drinking more than usual?",
        "No, I'm not especially thirsty.",
    ),
    _t(
        "rash",
        "symptom",
        "rash",
        r"rash|spots|skin|blisters?|red patch",
        "Have you noticed any rash?|Any changes to your skin?",
        "No rash.",
    ),
    _t("itching", "symptom", "itching", r"itch", "Is it itchy?|Have you been itching?", "No, it isn't itchy."),
    _t(
        "joint_pain",
        "symptom",
        "joint pain",
        r"joints?|arthritis|knees?|wrists?|knuckles|ankle pain|big toe",
        "Any pain or swelling in your joints?",
        "No, my joints are fine.",
    ),
    _t(
        "back_pain",
        "symptom",
        "back pain",
        r"back pain|backache|your back|lower back|spine|flank|loin",
        "Do you have any back pain?|Any pain in your lower back?",
        "No back pain.",
    ),
    _t(
        "muscle_aches",
        "symptom",
        "muscle aches",
        r"muscles?|aches and pains|achy|body aches?",
        "Have you had any muscle aches?",
        "No, my muscles are fine.",
    ),
    _t(
        "sore_throat",
        "symptom",
        "sore throat",
        r"throat",
        "Do you have a sore throat?|Is your throat sore?",
        "No, my throat is fine.",
    ),
    _t(
        "runny_nose",
        "symptom",
        "runny nose",
        r"runny nose|blocked nose|stuffy|congest|sneez|nasal|sinus",
        "Do you have a runny or blocked nose?",
        "No, my nose is fine.",
    ),
    _t(
        "ear_pain",
        "symptom",
        "ear pain",
        r"ears?\b|hearing",
        "Do you have any ear pain?|Any problems with your hearing?",
        "No, my ears are fine.",
    ),
    _t(
        "low_mood",
        "symptom",
        "mood",
        r"mood|depress|feel(?:ing)? (?:down|low|sad)|sad\b|hopeless|enjoy|interest in|self-?harm|suicid|harm yourself|end your life",
        "How has your mood been?|Have you been feeling down or hopeless?",
        "My mood has been fine.",
    ),
    _t(
        "anxiety",
        "symptom",
        "anxiety",
        r"anxious|anxiety|worr(?:y|ied|ying)|nervous|on edge|panic|stressed|stress",
        "Have you been feeling anxious or worried?|Have you been under a lot of stress?",
        "No, I'm not particularly anxious.",
    ),
    _t(
        "sleep",
        "symptom",
        "sleep",
        r"sleeping|insomnia|trouble (?:getting to )?sleep|wake up (?:early|at night)",
        "How have you been sleeping?",
        "I've been sleeping fine.",
    ),
    _t(
        "temperature_intolerance",
        "symptom",
        "heat or cold intolerance",
        r"(?:heat|cold) intoleran|(?:the )?cold or (?:the )?heat|(?:the )?heat or (?:the )?cold|feel(?:ing)? the (?:heat|cold)|too (?:hot|cold) when others",
        "Do you feel the cold or the heat more than other people?",
        "No, I cope with heat and cold as usual.",
    ),
    _t(
        "vaginal_symptoms",
        "symptom",
        "vaginal bleeding or discharge",
        r"vagina|discharge|bleeding between|spotting",
        "Any unusual vaginal bleeding or discharge?",
        "No, nothing unusual there.",
    ),
    # past history and medications
    _t(
        "past_medical_history",
        "history",
        "past medical history",
        r"medical (?:history|conditions?|problems?)|health (?:problems?|conditions?)|past history|any illnesses|long-?term (?:conditions?|illness)|diagnosed with|chronic",
        "Do you have any medical conditions?|What is your past medical history?",
        "I'm generally healthy.",
    ),
    _t(
        "surgeries",
        "history",
        "operations",
        r"surger(?:y|ies)|operations?|operated|hospital (?:before|stays?)|been in hospital",
        "Have you had any operations?|Have you ever been in hospital?",
        "I've never had an operation.",
    ),
    _t(
        "medications",
        "history",
        "medications",
        r"medications?|medicines?|tablets|pills|prescri|drugs? (?:do|are) you take|take anything regularly",
        "Do you take any medications?|Are you on any regular medicines?",
        "I don't take any regular medicines.",
    ),
    _t(
        "allergies",
        "history",
        "allergies",
        r"allerg\w*(?: to (?:any |some )?(?:medicines?|medications?|drugs?|foods?|tablets|anything))?",
        "Do you have any allergies?|Are you allergic to anything?",
        "No allergies that I know of.",
    ),
    _t(
        "menstrual_history",
        "history",
        "periods and pregnancy",
        r"periods?|menstrua|pregnan|last period|contracepti",
        "When was your last period?|Could you be pregnant?",
        "My periods are regular.",
    ),
    # social history
    _t(
        "smoking",
        "social",
        "smoking",
        r"smok|cigar|tobacco|vape|vaping",
        "Do you smoke?|Have you ever smoked?",
        "I don't smoke.",
    ),
    _t(
        "alcohol",
        "social",
        "alcohol",
        r"alcohol|drink(?:s|ing)? (?:alcohol|beer|wine)|do you drink\b(?! (?:water|fluids|enough))|how much do you drink|units|booze|beer|wine",
        "Do you drink alcohol?|How much alcohol do you drink in a week?",
        "I don't drink alcohol.",
    ),
    _t(
        "recreational_drugs",
        "social",
        "recreational drugs",
        r"recreational|street drugs|illegal|cannabis|cocaine|heroin|inject",
        "Do you use any recreational drugs?",
        "No, I don't take any drugs.",
    ),
    _t(
        "occupation",
        "social",
        "occupation",
        r"(?:for|at|your|you|of) work|working|job|occupation|for a living|employ",
        "What do you do for work?|What is your job?",
        "I'm not working at the moment.",
    ),
    _t(
        "living_situation",
        "social",
        "home situation",
        r"live with|living situation|home (?:situation|life)|at home|live alone|who is at home|household",
        "Who do you live with?|What is your home situation?",
        "I live with my family.",
    ),
    _t(
        "travel",
        "social",
        "recent travel",
        r"travel|abroad|been away|trip|flight|flew|overseas",
        "Have you travelled recently?|Have you been abroad?",
        "No, I haven't travelled recently.",
    ),
    _t(
        "sexual_history",
        "social",
        "sexual history",
        r"sexual(?:ly)?|sexual partners?|new partners?|unprotected|condoms?|sex\b",
        "Are you sexually active?|Any new sexual partners?",
        "There's nothing to mention there.",
    ),
    _t(
        "sick_contacts",
        "social",
        "sick contacts",
        r"anyone (?:else )?(?:at home |around you )?(?:been )?(?:ill|sick|unwell)|sick contacts|contact with anyone|others (?:ill|sick)",
        "Has anyone around you been ill?",
        "No, nobody around me has been ill.",
    ),
    # family history
    _t(
        "family_history",
        "family",
        "family history",
        r"(?:problems?|conditions?|illness(?:es)?|diseases?) (?:in|that runs? in|runs? in|running in) (?:your )?family|famil|parents?|mother|father|siblings?|brothers?|sisters?|runs in|relatives?",
        "Does anything run in your family?|Any medical problems in your family?",
        "Nothing runs in my family that I know of.",
    ),
]

TOPICS: dict[str, Topic] = {topic.key: topic for topic in _TOPIC_LIST}


@dataclass(frozen=True)
class TestSpec:
    """An examination or investigation a doctor can request with ``REQUEST TEST: <name>``.

    Attributes:
        key: the test id, e.g. ``"chest_xray"``.
        name: the display name.
        synonyms: other names a doctor may use (matched after :func:`normalize_test_name`).
        normal: the result when the case has no abnormal finding for it.
        kind: ``"exam"``, ``"lab"``, ``"imaging"``, ``"procedure"`` or ``"questionnaire"``.
        invasive: invasive or costly: ordering it without cause counts as an unnecessary test.
    """

    key: str
    name: str
    synonyms: tuple[str, ...]
    normal: str
    kind: str
    invasive: bool = False


def _s(key: str, name: str, synonyms: str, normal: str, kind: str, invasive: bool = False) -> TestSpec:
    return TestSpec(key, name, tuple(s for s in synonyms.split("|") if s), normal, kind, invasive)


_TEST_LIST = [
    # examinations
    _s(
        "vital_signs",
        "vital signs",
        "vitals|observations|obs|blood pressure|bp|heart rate|pulse|temperature|respiratory rate|oxygen saturation|sats|spo2|pulse oximetry",
        "Temperature 36.8 C, heart rate 76/min, blood pressure 122/78 mmHg, respiratory rate 14/min, SpO2 98% on room air.",
        "exam",
    ),
    _s(
        "general_exam",
        "general examination",
        "general appearance|general inspection|physical examination|physical exam|examination|exam",
        "Alert and comfortable at rest; not pale, jaundiced or cyanosed; well hydrated.",
        "exam",
    ),
    _s(
        "cardiac_exam",
        "cardiovascular examination",
        "heart exam|cardiac examination|cardiovascular exam|heart sounds|auscultate the heart|listen to the heart|cvs exam",
        "Heart sounds I and II normal, no murmurs; JVP not raised; peripheral pulses present.",
        "exam",
    ),
    _s(
        "respiratory_exam",
        "respiratory examination",
        "lung exam|chest exam|chest examination|respiratory exam|listen to the chest|listen to the lungs|auscultate the lungs|lung auscultation",
        "Chest expansion equal; vesicular breath sounds throughout; no crackles or wheeze.",
        "exam",
    ),
    _s(
        "abdominal_exam",
        "abdominal examination",
        "abdomen exam|abdominal exam|examine the abdomen|palpate the abdomen|tummy exam",
        "Abdomen soft and non-tender; no masses or organomegaly; bowel sounds normal.",
        "exam",
    ),
    _s(
        "neuro_exam",
        "neurological examination",
        "neuro exam|neurological exam|neurologic exam|cranial nerves|reflexes|power and sensation|nervous system exam",
        "Cranial nerves intact; normal tone, power, reflexes and sensation in all limbs; coordination and gait normal.",
        "exam",
    ),
    _s(
        "skin_exam",
        "skin examination",
        "skin exam|dermatological exam|look at the rash|examine the skin|examine the rash",
        "No rash or skin lesions.",
        "exam",
    ),
    _s(
        "throat_exam",
        "throat examination",
        "throat exam|oropharynx|look in the throat|examine the throat|tonsils|mouth exam",
        "Pharynx and tonsils normal; no exudate; no cervical lymphadenopathy.",
        "exam",
    ),
    _s(
        "ear_exam",
        "ear examination",
        "otoscopy|ear exam|look in the ears|examine the ears|tympanic membrane",
        "Both ear canals clear; tympanic membranes intact and normal.",
        "exam",
    ),
    _s(
        "eye_exam",
        "eye examination",
        "eye exam|fundoscopy|ophthalmoscopy|visual acuity|pupils|visual fields",
        "Visual acuity 6/6 both eyes; pupils equal and reactive; fundi normal.",
        "exam",
    ),
    _s(
        "joint_exam",
        "joint examination",
        "joint exam|musculoskeletal exam|msk exam|examine the joints|examine the knee",
        "No joint swelling, warmth or tenderness; full range of movement.",
        "exam",
    ),
    _s(
        "back_exam",
        "spine examination",
        "back exam|spinal exam|spine exam|straight leg raise|examine the back",
        "No spinal tenderness; full range of movement; straight leg raise negative both sides.",
        "exam",
    ),
    _s(
        "neck_exam",
        "neck and thyroid examination",
        "thyroid exam|neck exam|palpate the thyroid|lymph nodes|lymph node exam",
        "Thyroid not enlarged; no neck masses; no lymphadenopathy.",
        "exam",
    ),
    _s(
        "leg_exam",
        "leg examination",
        "calf exam|examine the legs|lower limb exam|examine the calf|legs exam",
        "Calves soft and non-tender; no swelling; pulses present.",
        "exam",
    ),
    _s(
        "mental_state_exam",
        "mental state examination",
        "mse|mental status exam|mental state exam|mental status examination",
        "Appropriately dressed, good rapport; mood euthymic; no abnormal thoughts or perceptions; insight intact.",
        "exam",
    ),
    _s(
        "pelvic_exam",
        "pelvic examination",
        "pelvic exam|gynaecological exam|gynecological exam|speculum exam|bimanual exam",
        "External genitalia normal; cervix healthy; no adnexal tenderness or masses.",
        "exam",
        True,
    ),
    _s(
        "rectal_exam",
        "digital rectal examination",
        "dre|rectal exam|pr exam|digital rectal exam",
        "Normal anal tone; no masses; no blood on the glove.",
        "exam",
        True,
    ),
    # laboratory
    _s(
        "cbc",
        "full blood count",
        "fbc|complete blood count|blood count|cbc|haemoglobin|hemoglobin|white cell count|wcc|white blood cells",
        "Haemoglobin 138 g/L, white cells 7.2 x10^9/L, platelets 250 x10^9/L.",
        "lab",
    ),
    _s(
        "electrolytes",
        "urea and electrolytes",
        "u&e|u and e|ue|kidney function|renal function|electrolytes|bmp|basic metabolic panel|creatinine|sodium|potassium",
        "Sodium 139, potassium 4.2 mmol/L, urea 5.1 mmol/L, creatinine 78 umol/L.",
        "lab",
    ),
    _s(
        "lft",
        "liver function tests",
        "lfts|liver tests|liver function|bilirubin|alt|liver enzymes",
        "Bilirubin 10 umol/L, ALT 22 U/L, ALP 80 U/L, albumin 42 g/L.",
        "lab",
    ),
    _s(
        "crp",
        "C-reactive protein",
        "crp|inflammatory markers|esr|c reactive protein|sed rate",
        "CRP 3 mg/L, ESR 8 mm/h.",
        "lab",
    ),
    _s(
        "glucose",
        "blood glucose",
        "blood sugar|glucose|random glucose|fasting glucose|finger prick|capillary glucose|bm",
        "Random blood glucose 5.4 mmol/L.",
        "lab",
    ),
    _s("hba1c", "HbA1c", "hba1c|a1c|glycated haemoglobin|glycated hemoglobin", "HbA1c 36 mmol/mol (5.4%).", "lab"),
    _s(
        "lipids",
        "lipid profile",
        "cholesterol|lipid panel|lipid profile|lipids",
        "Total cholesterol 4.6 mmol/L, LDL 2.6 mmol/L, HDL 1.4 mmol/L.",
        "lab",
    ),
    _s(
        "tsh",
        "thyroid function tests",
        "tft|tfts|thyroid function|thyroid tests|tsh|t4|free t4",
        "TSH 1.8 mU/L, free T4 15 pmol/L.",
        "lab",
    ),
    _s(
        "troponin",
        "troponin",
        "trop|cardiac enzymes|high sensitivity troponin|hs troponin",
        "High-sensitivity troponin 4 ng/L (normal).",
        "lab",
    ),
    _s("d_dimer", "D-dimer", "d dimer|ddimer|d-dimer", "D-dimer 0.2 mg/L (normal).", "lab"),
    _s(
        "bnp",
        "BNP",
        "nt-probnp|nt probnp|bnp|brain natriuretic peptide|natriuretic peptide",
        "NT-proBNP 60 pg/mL (normal).",
        "lab",
    ),
    _s("lipase", "lipase", "amylase|serum lipase|pancreatic enzymes", "Lipase 30 U/L (normal).", "lab"),
    _s(
        "urinalysis",
        "urine dipstick",
        "urinalysis|urine dip|urine test|dipstick|urine analysis|ua",
        "Urine dipstick: no blood, protein, leukocytes, nitrites or glucose.",
        "lab",
    ),
    _s(
        "urine_culture",
        "urine culture",
        "urine culture|msu|mid-stream urine|urine mcs",
        "No significant growth.",
        "lab",
    ),
    _s(
        "pregnancy_test",
        "pregnancy test",
        "urine hcg|beta hcg|hcg|b-hcg|bhcg|serum hcg|pregnancy test",
        "Pregnancy test negative.",
        "lab",
    ),
    _s("blood_culture", "blood cultures", "blood culture|blood cultures|cultures", "No growth after 48 hours.", "lab"),
    _s(
        "throat_swab",
        "throat swab",
        "rapid strep test|strep test|throat culture|rapid antigen detection test|throat swab",
        "Throat swab: no group A streptococcus.",
        "lab",
    ),
    _s(
        "viral_swab",
        "respiratory viral swab",
        "flu test|influenza swab|covid test|covid swab|pcr swab|nasal swab|viral pcr|respiratory panel",
        "No influenza, RSV or SARS-CoV-2 detected.",
        "lab",
    ),
    _s(
        "monospot",
        "monospot test",
        "glandular fever test|ebv serology|mono test|heterophile antibody|monospot",
        "Monospot negative.",
        "lab",
    ),
    _s(
        "stool_test",
        "stool test",
        "stool culture|stool sample|stool microscopy|faecal calprotectin|fecal calprotectin|stool analysis|fit test|faecal immunochemical test",
        "Stool culture negative; faecal calprotectin 20 ug/g.",
        "lab",
    ),
    _s(
        "abg",
        "arterial blood gas",
        "abg|blood gas|arterial gas|vbg|venous blood gas|lactate",
        "pH 7.41, pCO2 5.2 kPa, pO2 12.1 kPa, HCO3 24 mmol/L, lactate 1.0 mmol/L.",
        "lab",
    ),
    _s(
        "iron_studies",
        "iron studies",
        "ferritin|iron|iron studies|b12|folate|haematinics|hematinics",
        "Ferritin 90 ug/L; B12 and folate normal.",
        "lab",
    ),
    _s(
        "autoantibodies",
        "autoantibody screen",
        "ana|rheumatoid factor|anti-ccp|anti ccp|autoimmune screen|autoantibodies|rf",
        "ANA, rheumatoid factor and anti-CCP negative.",
        "lab",
    ),
    _s("uric_acid", "serum urate", "urate|uric acid|serum urate", "Serum urate 0.30 mmol/L.", "lab"),
    _s(
        "coagulation",
        "coagulation screen",
        "inr|pt|aptt|clotting screen|coagulation|clotting",
        "INR 1.0, APTT 30 s.",
        "lab",
    ),
    _s(
        "sti_screen",
        "sexual health screen",
        "sti screen|std test|chlamydia test|gonorrhoea test|gonorrhea test|hiv test|nucleic acid amplification test|naat",
        "Chlamydia, gonorrhoea and HIV tests negative.",
        "lab",
    ),
    _s(
        "cortisol",
        "cortisol",
        "morning cortisol|short synacthen test|synacthen|serum cortisol",
        "9 am cortisol 420 nmol/L.",
        "lab",
    ),
    # imaging and procedures
    _s(
        "ecg",
        "ECG",
        "ekg|electrocardiogram|12 lead ecg|12-lead ecg|ecg",
        "Sinus rhythm 74/min; normal axis; no ST or T-wave changes.",
        "imaging",
    ),
    _s(
        "chest_xray",
        "chest X-ray",
        "cxr|chest xray|chest radiograph|chest film|xray of the chest|chest x ray",
        "Clear lung fields; normal heart size; no effusion or pneumothorax.",
        "imaging",
    ),
    _s(
        "echocardiogram",
        "echocardiogram",
        "echo|cardiac ultrasound|transthoracic echo|tte|echocardiography",
        "Normal left ventricular size and function (ejection fraction 60%); valves normal.",
        "imaging",
    ),
    _s(
        "ct_head",
        "CT head",
        "ct brain|head ct|ct scan of the head|ct scan of the brain|brain ct",
        "No intracranial haemorrhage, infarct or mass.",
        "imaging",
        True,
    ),
    _s(
        "mri_brain",
        "MRI brain",
        "brain mri|mri head|head mri|mri scan of the brain",
        "Normal brain MRI.",
        "imaging",
        True,
    ),
    _s(
        "ct_abdomen",
        "CT abdomen and pelvis",
        "ct abdomen|abdominal ct|ct abdo|ct kub|ct of the abdomen|ct scan of the abdomen|ct urogram",
        "No acute abnormality in the abdomen or pelvis.",
        "imaging",
        True,
    ),
    _s(
        "abdominal_ultrasound",
        "abdominal ultrasound",
        "ultrasound abdomen|abdominal us|liver ultrasound|gallbladder ultrasound|ultrasound of the abdomen|renal ultrasound|kidney ultrasound",
        "Normal liver, gallbladder, pancreas and kidneys.",
        "imaging",
    ),
    _s(
        "pelvic_ultrasound",
        "pelvic ultrasound",
        "transvaginal ultrasound|pelvic us|ultrasound pelvis|ultrasound of the pelvis|tvus",
        "Normal uterus and ovaries; no free fluid.",
        "imaging",
    ),
    _s(
        "ctpa",
        "CT pulmonary angiogram",
        "ctpa|ct pulmonary angiography|ct chest angiogram|pe scan|v/q scan|vq scan",
        "No pulmonary embolism.",
        "imaging",
        True,
    ),
    _s(
        "leg_doppler",
        "leg Doppler ultrasound",
        "doppler|leg ultrasound|venous duplex|duplex ultrasound|compression ultrasound|dvt scan",
        "No deep vein thrombosis.",
        "imaging",
    ),
    _s(
        "joint_xray",
        "joint X-ray",
        "knee xray|x-ray of the joint|joint radiograph|hand xray|foot xray|xray of the knee|ankle xray|wrist xray",
        "No fracture, erosion or joint space narrowing.",
        "imaging",
    ),
    _s(
        "spine_imaging",
        "spine MRI",
        "mri spine|spinal mri|lumbar mri|mri of the spine|spine xray|lumbar spine xray",
        "No disc prolapse, cord compression or bony lesion.",
        "imaging",
        True,
    ),
    _s(
        "spirometry",
        "spirometry",
        "lung function tests|pulmonary function tests|pfts|pft|spirometry|fev1",
        "FEV1 and FVC within normal limits; FEV1/FVC 0.80; no reversibility.",
        "procedure",
    ),
    _s(
        "peak_flow",
        "peak expiratory flow",
        "peak flow|pefr|peak expiratory flow rate",
        "Peak flow 480 L/min (95% of predicted).",
        "procedure",
    ),
    _s(
        "endoscopy",
        "upper GI endoscopy",
        "ogd|gastroscopy|upper endoscopy|egd|oesophagogastroduodenoscopy",
        "Normal oesophagus, stomach and duodenum.",
        "procedure",
        True,
    ),
    _s(
        "colonoscopy",
        "colonoscopy",
        "lower gi endoscopy|sigmoidoscopy|flexible sigmoidoscopy",
        "Normal colonic mucosa to the caecum.",
        "procedure",
        True,
    ),
    _s(
        "lumbar_puncture",
        "lumbar puncture",
        "lp|spinal tap|csf analysis|csf",
        "Clear CSF; opening pressure 15 cmH2O; white cells 2/uL; protein and glucose normal.",
        "procedure",
        True,
    ),
    _s("eeg", "EEG", "electroencephalogram|eeg|brain wave test", "Normal EEG.", "procedure", True),
    _s(
        "phq9",
        "PHQ-9 questionnaire",
        "phq9|phq-9|depression questionnaire|depression screen|depression screening",
        "PHQ-9 score 2 (minimal).",
        "questionnaire",
    ),
    _s(
        "gad7",
        "GAD-7 questionnaire",
        "gad7|gad-7|anxiety questionnaire|anxiety screen",
        "GAD-7 score 2 (minimal).",
        "questionnaire",
    ),
    _s(
        "audit",
        "AUDIT questionnaire",
        "audit-c|alcohol questionnaire|alcohol screen|audit",
        "AUDIT score 3 (low risk).",
        "questionnaire",
    ),
]

TESTS: dict[str, TestSpec] = {test.key: test for test in _TEST_LIST}

#: medical words and the lay words a patient uses instead (a lay-vocabulary persona says the right side)
LAY_TERMS: dict[str, str] = {
    "hypertension": "high blood pressure",
    "hyperlipidaemia": "high cholesterol",
    "hyperlipidemia": "high cholesterol",
    "hypercholesterolaemia": "high cholesterol",
    "type 2 diabetes mellitus": "type 2 diabetes",
    "diabetes mellitus": "diabetes",
    "myocardial infarction": "heart attack",
    "cerebrovascular accident": "stroke",
    "dyspnoea": "trouble breathing",
    "dyspnea": "trouble breathing",
    "haemoptysis": "coughing up blood",
    "hemoptysis": "coughing up blood",
    "pyrexia": "a fever",
    "syncope": "fainting",
    "palpitations": "my heart racing",
    "emesis": "being sick",
    "haematuria": "blood in my wee",
    "hematuria": "blood in my wee",
    "dysuria": "burning when I pee",
    "micturition": "passing water",
    "gastro-oesophageal reflux disease": "acid reflux",
    "gastroesophageal reflux disease": "acid reflux",
    "osteoarthritis": "wear-and-tear arthritis",
    "hypothyroidism": "an underactive thyroid",
    "hyperthyroidism": "an overactive thyroid",
    "cholecystectomy": "gallbladder operation",
    "appendicectomy": "appendix out",
    "appendectomy": "appendix out",
    "asthma exacerbation": "asthma attack",
    "chronic obstructive pulmonary disease": "COPD, the lung disease",
    "atrial fibrillation": "an irregular heartbeat",
    "deep vein thrombosis": "a clot in my leg",
    "pulmonary embolism": "a clot on my lung",
    "anaemia": "low blood",
    "anemia": "low blood",
    "analgesia": "painkillers",
    "paracetamol": "paracetamol",
    "NSAIDs": "anti-inflammatory painkillers",
    "oedema": "swelling",
    "edema": "swelling",
    "pruritus": "itching",
    "malaise": "feeling rotten",
    "epistaxis": "nosebleeds",
    "tachycardia": "a fast heartbeat",
    "vertigo": "the room spinning",
    "photophobia": "light hurting my eyes",
    "nocturia": "getting up at night to pee",
    "polyuria": "peeing a lot",
    "polydipsia": "being very thirsty",
    "diaphoresis": "sweating",
    "melaena": "black, tarry poo",
    "melena": "black, tarry poo",
    "rhinorrhoea": "a runny nose",
    "rhinorrhea": "a runny nose",
    "arthralgia": "achy joints",
    "myalgia": "aching muscles",
    "cephalgia": "headache",
    "lethargy": "tiredness",
    "insomnia": "trouble sleeping",
    "dysphagia": "trouble swallowing",
    "pharyngitis": "a sore throat",
    "otalgia": "earache",
    "paraesthesia": "pins and needles",
    "paresthesia": "pins and needles",
    "erythema": "redness",
    "pedal": "ankle",
    "bilateral": "on both sides",
    "unilateral": "on one side",
    "intermittent": "on and off",
    "postprandial": "after eating",
    "exertional": "when I exert myself",
    "nocturnal": "at night",
    "acute": "sudden",
    "chronic": "long-standing",
}

#: medical words a lay explanation avoids and a lay patient never says (the longer LAY_TERMS keys), lower case
JARGON = re.compile(r"(?<![a-z])(" + "|".join(re.escape(t.lower()) for t in LAY_TERMS if len(t) > 5) + r")(?![a-z])")

_TEST_NORMALIZE = re.compile(r"[^a-z0-9&/+ ]+")


def normalize_test_name(name: str) -> str:
    """Lower case, punctuation to spaces, ``x-ray`` to ``xray``, single spaces.

    >>> normalize_test_name("  Chest X-Ray, please. ")
    'chest xray please'
    """
    text = name.lower().replace("x-ray", "xray").replace("x ray", "xray")
    text = _TEST_NORMALIZE.sub(" ", text)
    return " ".join(text.split())
